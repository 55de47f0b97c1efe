"""Input errors click itself raises while parsing (an unknown option, a choice or type it refuses) end as one
``error:`` line naming the option, exit 2 and no usage block, like every other bad input; a bare command group
still shows its help."""

from __future__ import annotations

import pytest
from cli_run import invoke, run


@pytest.mark.parametrize("args,words", [
    (("train", "--recompute", "bogus"), ["--recompute", "'selective'"]),
    (("analyze", "--mode", "best"), ["--mode", "'calibrated'"]),
    (("train", "--tp", "x"), ["--tp", "integer"]),
    (("train", "--bogus"), ["No such option: --bogus"]),
    (("bogus",), ["No such command 'bogus'"]),
])
def test_click_errors_are_one_line(args, words):
    code, out = invoke(list(args))
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), out
    assert "Usage:" not in out and "Traceback" not in out and all(w in out for w in words), out


def test_as_a_user_runs_it_and_bare_groups_show_help():
    proc = run("train", "--schedule", "pipedream")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")
    assert "--schedule" in proc.stderr and "llmecon train -h" in proc.stderr
    code, out = invoke(["catalog"])
    assert "Usage: llmecon catalog" in out and "training-runs" in out
