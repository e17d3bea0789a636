"""Wire shapes of the OpenAI chat-completions and Anthropic messages APIs, for the loopback server.

Everything here is deterministic: token counts are estimated from characters (4 per token), ids
count requests, timestamps are fixed, and the default speech is a tone burst per word.
"""

from __future__ import annotations

import io
import json
import math
import wave
from typing import Any

import numpy as np

FIXED_CREATED = 1_700_000_000          # a constant "created" so responses are reproducible
SPEECH_RATE = 24_000                   # OpenAI's TTS sample rate
WORD_S, GAP_S = 0.25, 0.05


def estimate_tokens(text: str) -> int:
    """A deterministic token estimate: one token per 4 characters, rounded up."""
    return math.ceil(len(text) / 4) if text else 0


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):       # content blocks: [{"type": "text", "text": ...}, ...]
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def prompt_text(req: dict[str, Any]) -> str:
    """All prompt text of a chat request (system included), for token counting."""
    parts = [_content_text(req.get("system", ""))]
    parts += [_content_text(m.get("content", "")) for m in req.get("messages", [])]
    return "\n".join(p for p in parts if p)


def last_user_text(req: dict[str, Any]) -> str:
    """The text of the last user message of an OpenAI or Anthropic chat request."""
    for m in reversed(req.get("messages", [])):
        if m.get("role") == "user":
            return _content_text(m.get("content", ""))
    return ""


def first_user_text(req: dict[str, Any]) -> str:
    for m in req.get("messages", []):
        if m.get("role") == "user":
            return _content_text(m.get("content", ""))
    return ""


def forced_tool(req: dict[str, Any]) -> dict[str, Any] | None:
    """The tool an Anthropic request forces (``tool_choice {"type": "tool", "name": …}``)."""
    choice = req.get("tool_choice") or {}
    if choice.get("type") != "tool":
        return None
    return next((t for t in req.get("tools") or [] if t.get("name") == choice.get("name")), None)


def structured_mode(req: dict[str, Any]) -> str | None:
    """The structured-output mode a chat request uses: ``json_schema``, ``json_object``,
    ``tool`` (Anthropic forced tool), ``output_config`` (Anthropic output format) or None."""
    rf = req.get("response_format") or {}
    if rf.get("type") in ("json_schema", "json_object"):
        return rf["type"]
    if forced_tool(req) is not None:
        return "tool"
    if ((req.get("output_config") or {}).get("format") or {}).get("type") == "json_schema":
        return "output_config"
    return None


def request_schema(req: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON Schema a request asks for natively (OpenAI ``response_format``, an Anthropic
    forced tool's ``input_schema`` or ``output_config.format``), or None."""
    rf = req.get("response_format") or {}
    if rf.get("type") == "json_schema":
        return (rf.get("json_schema") or {}).get("schema")
    tool = forced_tool(req)
    if tool is not None:
        return tool.get("input_schema")
    fmt = (req.get("output_config") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        return fmt.get("schema")
    return None


def request_max_tokens(req: dict[str, Any]) -> int | None:
    return req.get("max_completion_tokens") or req.get("max_tokens")


def example_from_schema(schema: dict[str, Any], _root: dict[str, Any] | None = None) -> Any:
    """A small instance that validates against ``schema`` (objects get every property)."""
    root = _root or schema
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        return example_from_schema(root.get("$defs", root.get("definitions", {}))[name], root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return example_from_schema(options[0], root)
    t = schema.get("type", "object")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t == "object":
        props = schema.get("properties", {})
        return {k: example_from_schema(v, root) for k, v in props.items()}
    if t == "array":
        n = schema.get("minItems", 0)
        item = schema.get("items", {"type": "string"})
        return [example_from_schema(item, root) for _ in range(n)]
    if t == "string":
        return "x" * max(1, schema.get("minLength", 4))
    if t == "integer":
        return int(schema.get("minimum", 0))
    if t == "number":
        return float(schema.get("minimum", 0.0))
    if t == "boolean":
        return False
    return None


# ---- response bodies ----------------------------------------------------------------------

def openai_completion(req: dict[str, Any], text: str, finish: str, n: int) -> dict[str, Any]:
    p, c = estimate_tokens(prompt_text(req)), estimate_tokens(text)
    return {
        "id": f"chatcmpl-loopback-{n}", "object": "chat.completion", "created": FIXED_CREATED,
        "model": req.get("model", "loopback"), "system_fingerprint": "loopback",
        "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                     "message": {"role": "assistant", "content": text, "refusal": None}}],
        "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
    }


def anthropic_message(req: dict[str, Any], text: str, finish: str, n: int) -> dict[str, Any]:
    """A message; when the request forces a tool and ``text`` is a JSON object that was not
    cut off, the answer is that tool's call (as the API answers a forced tool)."""
    stop = {"stop": "end_turn", "length": "max_tokens"}.get(finish, finish)
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    tool = forced_tool(req)
    if tool is not None and finish == "stop":
        try:
            args = json.loads(text)
        except ValueError:
            args = None
        if isinstance(args, dict):
            content = [{"type": "tool_use", "id": f"toolu_loopback_{n}", "name": tool["name"], "input": args}]
            stop = "tool_use"
    return {
        "id": f"msg_loopback_{n}", "type": "message", "role": "assistant",
        "model": req.get("model", "loopback"), "content": content,
        "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": estimate_tokens(prompt_text(req)),
                  "output_tokens": estimate_tokens(text)},
    }


_OPENAI_ERR = {401: "invalid_api_key", 429: "rate_limit_exceeded", 500: "server_error", 404: "not_found",
               400: "invalid_request_error"}
_ANTHROPIC_ERR = {401: "authentication_error", 429: "rate_limit_error", 500: "api_error", 404: "not_found_error",
                  400: "invalid_request_error"}


def error_body(api: str, status: int, message: str) -> dict[str, Any]:
    if api == "anthropic":
        return {"type": "error", "error": {"type": _ANTHROPIC_ERR.get(status, "api_error"),
                                           "message": message}}
    code = _OPENAI_ERR.get(status, "server_error")
    return {"error": {"message": message, "type": code, "param": None, "code": code}}


# ---- speech -------------------------------------------------------------------------------

def tone_speech(text: str, voice: str = "alloy", response_format: str = "wav") -> bytes:
    """Default ``/v1/audio/speech``: one tone burst per word (0.25 s, 50 ms gaps) at 24 kHz.

    The pitch depends on the voice name, so two voices are distinguishable. ``wav`` and
    ``pcm`` (raw 16-bit little-endian mono, as OpenAI sends it) are supported.
    """
    n_words = max(1, len(text.split()))
    pitch = 140.0 + (sum(voice.encode()) % 8) * 20.0
    t = np.arange(int(WORD_S * SPEECH_RATE)) / SPEECH_RATE
    burst = 0.3 * np.sin(2 * np.pi * pitch * t) * np.hanning(t.size)
    gap = np.zeros(int(GAP_S * SPEECH_RATE))
    pcm = (np.tile(np.concatenate([burst, gap]), n_words) * 32767).astype("<i2").tobytes()
    if response_format == "pcm":
        return pcm
    if response_format != "wav":
        raise ValueError(f"loopback speech supports response_format wav or pcm, not {response_format!r}")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SPEECH_RATE)
        w.writeframes(pcm)
    return buf.getvalue()
