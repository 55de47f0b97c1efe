"""Run the CLI as a user does (``python -m llmecon``) for the end-to-end tests."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import traceback

from llmecon.cli import command

CMD = command()  # the click command ``llmecon`` runs, with its error handling (exit 2, one line)


SRC = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "src")


def modules_after(argv: list[str]) -> list[str]:
    """The modules a fresh interpreter has imported after ``llmecon argv`` (with only ``src`` on the path)."""
    code = ("import sys, io, contextlib\nfrom llmecon.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    try: main({argv!r})\n    except SystemExit as e: assert not e.code, e.code\n"
            "print(__import__('json').dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": SRC, "PATH": ""}, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llmecon", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd)


def run_json(*args: str) -> dict:
    """``args`` with ``--json``: exit 0, no traceback, one JSON object on stdout."""
    proc = run(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def invoke(args: list[str]) -> tuple[object, str]:
    """Run ``llmecon args`` in this process, as ``python -m llmecon`` does but ~100x faster: (exit code,
    stdout + stderr). An exception that escapes is returned as the code "traceback" with its text."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            CMD.main(args=list(args), prog_name="llmecon", standalone_mode=True)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # noqa: BLE001 - anything that escapes is what the caller looks for
            code = "traceback"
            err.write(traceback.format_exc())
    return code, out.getvalue() + err.getvalue()


def invoke_json(*args: str) -> dict:
    """``invoke`` with ``--json``: exit 0 and one JSON object."""
    code, out = invoke([*args, "--json"])
    assert code == 0, out
    return json.loads(out)


def invoke_fails(*args: str) -> str:
    """``invoke`` of bad input: exit 2 with one line ``error: ...`` and no traceback; that line."""
    code, out = invoke(list(args))
    assert code == 2, out
    assert "Traceback" not in out
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out
    return lines[0]
