#!/usr/bin/env bash
# Create (idempotently) the throw-away venv holding the peer tool AIConfigurator 0.12.0 (NVIDIA, Apache-2.0),
# used only by benchmarks/peers/aiconfigurator_search.py (driven from benchmarks/planner_speed.py).  It lives
# outside the repo, nothing from it is vendored, and llmecon never depends on it.  Prints the venv's python
# path on the last line.
#
#   --venv DIR / LLMECON_AIC_VENV   venv directory (default /work/peer-venvs/aiconfigurator)
#   PYTHON                          interpreter used to create it (default python3; 3.11 was used)
#
# Size: about 850 MB (pandas, scipy, matplotlib, bokeh, plotly and aiconfigurator-core's measured kernel tables
# and compiled Rust engine).  Installed in about a minute from the package index on the 2-core box.  At run time
# it needs no network: the model configs (deepseek-ai/DeepSeek-V3, ...) and the perf databases ship in
# aiconfigurator-core; the runner sets HF_HUB_OFFLINE=1 to make sure.
set -euo pipefail

VENV="${LLMECON_AIC_VENV:-/work/peer-venvs/aiconfigurator}"
while [ $# -gt 0 ]; do
    case "$1" in
        --venv) VENV="$2"; shift 2 ;;
        --venv=*) VENV="${1#--venv=}"; shift ;;
        *) echo "usage: $0 [--venv DIR]" >&2; exit 2 ;;
    esac
done
PY="${PYTHON:-python3}"
PINS=("aiconfigurator==0.12.0" "aiconfigurator-core==0.12.0")

venv_ok() {
    [ -x "$VENV/bin/python" ] && HF_HUB_OFFLINE=1 "$VENV/bin/python" - <<'PYEOF' >/dev/null 2>&1
from importlib.metadata import version
assert version("aiconfigurator") == "0.12.0", version("aiconfigurator")
assert version("aiconfigurator-core") == "0.12.0", version("aiconfigurator-core")
import aiconfigurator.cli.api  # noqa: F401  (also checks that it imports)
PYEOF
}

if venv_ok; then
    echo "aiconfigurator venv already ready at $VENV" >&2
else
    if [ ! -x "$VENV/bin/python" ]; then
        mkdir -p "$(dirname "$VENV")"
        "$PY" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q "${PINS[@]}"
    venv_ok || { echo "aiconfigurator venv at $VENV is not usable after install" >&2; exit 1; }
fi

echo "$VENV/bin/python"
