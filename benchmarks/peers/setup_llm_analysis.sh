#!/usr/bin/env bash
# Create (idempotently) the throw-away venv holding the peer tool llm-analysis 0.2.2,
# used only by benchmarks/peers/llm_analysis_point.py.  It lives outside the repo and
# nothing from it is vendored.  Prints the venv's python path on the last line.
#
#   LLMECON_PEER_VENV  venv directory   (default /tmp/peers/llm-analysis)
#   PYTHON             interpreter used to create it (default python3)
#
# The transformers pin matters: without it pip backtracks for minutes.  With the two
# pins the rest resolves by itself (fire, huggingface-hub 0.14.1, tokenizers 0.13.3,
# numpy 2.x all import fine; no torch is pulled in).
set -euo pipefail

VENV="${LLMECON_PEER_VENV:-/tmp/peers/llm-analysis}"
PY="${PYTHON:-python3}"
PINS=("llm-analysis==0.2.2" "transformers==4.30.2")

venv_ok() {
    [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - <<'PYEOF' >/dev/null 2>&1
from importlib.metadata import version
assert version("llm-analysis") == "0.2.2", version("llm-analysis")
assert version("transformers") == "4.30.2", version("transformers")
import llm_analysis.analysis  # noqa: F401  (also checks that it imports)
PYEOF
}

if venv_ok; then
    echo "llm-analysis venv already ready at $VENV" >&2
else
    if [ ! -x "$VENV/bin/python" ]; then
        mkdir -p "$(dirname "$VENV")"
        "$PY" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q "${PINS[@]}"
    venv_ok || { echo "llm-analysis venv at $VENV is not usable after install" >&2; exit 1; }
fi

echo "$VENV/bin/python"
