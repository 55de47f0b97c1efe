"""``llmecon web`` as a user starts it: it serves the page and the API on 127.0.0.1, and a port
it cannot use is one line and exit 2 (no traceback)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from cli_run import run

pytest.importorskip("fastapi", reason="llmecon web needs the [web] extra: pip install -e '.[web]'")
pytest.importorskip("uvicorn", reason="llmecon web needs the [web] extra: pip install -e '.[web]'")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serves_page_and_api():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llmecon", "web", "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline, body = time.monotonic() + 30, None
        while body is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/catalog", timeout=2) as r:
                    body = json.load(r)
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                time.sleep(0.2)
        assert body is not None and "deepseek-v3" in body["models"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
            page = r.read().decode()
        assert "/static/plotly.min.js" in page and "https://" not in page and "http://" not in page
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_port_in_use_is_one_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = run("web", "--port", str(port))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith(f"error: --port {port}: cannot listen") and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("args, words", [(("--port", "0"), "must be 1-65535"),
                                         (("--host", "nosuchhost.invalid"), "cannot resolve")])
def test_bad_address_is_one_line(args, words):
    proc = run("web", *args)
    assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr
