"""Run the CLI as a user does (``python -m llmecon``) for the end-to-end tests."""

from __future__ import annotations

import json
import subprocess
import sys


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llmecon", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd)


def run_json(*args: str) -> dict:
    """``args`` with ``--json``: exit 0, no traceback, one JSON object on stdout."""
    proc = run(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)
