"""The command line registers only the invoked command's module (issue 23, cold start): the table
``cli.COMMANDS`` must name, for every command, the modules that register it, and running one
command must not import the others' modules or the heavy optional libraries."""

from __future__ import annotations

import subprocess
import sys

from cli_run import SRC, modules_after

from llmecon.cli import COMMAND_MODULES, COMMANDS, build_app



def test_command_table_matches_the_full_registration():
    app = build_app()  # every module
    registered = {}
    for c in app.registered_commands:
        registered.setdefault(c.name or c.callback.__name__, set()).add(c.callback.__module__.rsplit(".", 1)[1])
    for g in app.registered_groups:
        registered.setdefault(g.name, set()).update(
            c.callback.__module__.rsplit(".", 1)[1] for c in g.typer_instance.registered_commands)
    assert set(registered) == set(COMMANDS)
    for name, modules in registered.items():
        assert modules <= set(COMMANDS[name]), name
    assert {m for ms in COMMANDS.values() for m in ms} == set(COMMAND_MODULES)


def test_analyze_imports_only_its_command_module_and_no_heavy_library():
    mods = modules_after(["analyze", "--mode", "ideal", "--json"])
    assert sorted(m for m in mods if m.startswith("llmecon.cli.")) == ["llmecon.cli.analyze", "llmecon.cli.coerce",
                                                                           "llmecon.cli.options"]
    for heavy in ("matplotlib", "pandas", "pyarrow", "dask", "scipy", "fastapi", "rich"):
        assert heavy not in mods, heavy


def test_help_still_lists_every_command():
    out = subprocess.run([sys.executable, "-m", "llmecon", "--help"], env={"PYTHONPATH": SRC, "PATH": "",
                                                                            "COLUMNS": "200"},
                         capture_output=True, text=True, check=True).stdout
    for name in COMMANDS:
        assert name in out, name


def test_an_invoked_command_is_built_alone_and_the_shared_app_keeps_all():
    one = build_app(["step", "--json"])
    assert [c.name or c.callback.__name__ for c in one.registered_commands] == ["step"]
    assert one.registered_groups == []
    group = build_app(["catalog", "systems"])
    assert [g.name for g in group.registered_groups] == ["catalog"] and group.registered_commands == []
    everything = build_app()
    assert {c.name or c.callback.__name__ for c in everything.registered_commands} >= {"analyze", "step", "batch"}
