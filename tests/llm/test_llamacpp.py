"""A real local LLM end to end: the ``llamacpp`` provider with Qwen2.5-Coder-0.5B-Instruct (GGUF).

Set up with ``bash tests/llm/setup_llamacpp.sh .venv/bin/python`` (``make test-llm`` does it).
Slow: loading the model and generating take tens of seconds on 2 cores.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from bargein.llm import get_llm

pytestmark = pytest.mark.slow
GGUF = Path(__file__).parent / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


class Capital(BaseModel):
    country: str
    capital: str
    population_millions: float = Field(ge=0)


@pytest.fixture(scope="module")
def llm(tmp_path_factory):
    pytest.importorskip("llama_cpp", reason="run tests/llm/setup_llamacpp.sh first")
    if not GGUF.is_file():
        pytest.skip(f"{GGUF} missing: run tests/llm/setup_llamacpp.sh first")
    return get_llm(f"llamacpp:{GGUF}", workdir=tmp_path_factory.mktemp("llamacpp"), max_tokens=96)


def test_llamacpp_returns_a_schema_valid_object(llm, capsys):
    messages = [{"role": "system", "content": "You answer geography questions in JSON."},
                {"role": "user", "content": "What is the capital of France, and roughly how many "
                                            "million people live in France?"}]
    t = time.perf_counter()
    obj = asyncio.run(llm.structured(messages, Capital, agent="geography", temperature=0.0))
    took = time.perf_counter() - t
    assert isinstance(obj, Capital)
    again = asyncio.run(llm.structured(messages, Capital, agent="geography", temperature=0.0))
    assert again == obj                                      # from the response cache
    summary = llm.ledger.summary()["this_run"]
    assert summary["cached_calls"] >= 1 and summary["output_tokens"] > 0 and summary["cost_usd"] == 0
    with capsys.disabled():
        print(f"\nllamacpp {GGUF.name}: {obj.model_dump_json()} in {took:.1f}s; "
              f"ledger {llm.ledger.spend_str()}, tokens in/out "
              f"{summary['input_tokens']}/{summary['output_tokens']}")
