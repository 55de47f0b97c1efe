"""The folders are the layers (DESIGN.md §2): imports point down only, no cycles, small modules,
a dozen modules at most at the package root, and no Python line in src/, tests/ or benchmarks/
longer than 120 columns.

The import graph is read from the source with ``ast`` (every ``import`` and ``from ... import``,
also those inside functions; those under ``if TYPE_CHECKING:`` are for typing only and skipped).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "llmecon"

# Rank of each top-level module or folder: a module may import only from its own rank or below.
RANKS = {
    "errors": 0, "units": 0, "dtypes": 0, "files": 0,
    "spec": 1,
    "catalog": 2,
    "step": 3,
    "econ": 4,
    "serving": 5,
    "sweep": 6, "fidelity": 6, "revnet": 6,  # revnet: a measured torch module, like fidelity/measure
    "lecture": 7,
    "resolve": 8,
    "report": 9,
    "commands": 10,  # the command layer: requests in, results out; the front-ends' only way into the library
    "cli": 11, "web": 11,
}
# Imports the ranks allow but DESIGN.md §2 does not: step/ takes specs and a profile, not catalogue names.
FORBIDDEN = {"step": {"catalog"}}
# Known, documented exceptions (each a gap to close, not a licence): a speculative draft model is still
# named by its catalogue name in ``Speculation.draft`` and looked up where its steps are priced.
ALLOWED = {("llmecon.step.speculative", "llmecon.catalog.models")}
MAX_LINES = 600
MAX_COLUMNS = 120
LINE_CHECKED = ("src", "tests", "benchmarks")
MAX_ROOT_MODULES = 12


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_pkg else parts), is_pkg


def _modules() -> dict[str, Path]:
    return {_module_name(p)[0]: p for p in PKG.rglob("*.py")}


def _typing_only(tree: ast.AST) -> set[int]:
    """ids of import nodes under ``if TYPE_CHECKING:``."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                for sub in ast.walk(inner):
                    skip.add(id(sub))
    return skip


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The llmecon modules ``path`` imports (a name imported from a package resolves to the
    submodule when one of that name exists)."""
    name, is_pkg = _module_name(path)
    package = name if is_pkg else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _typing_only(tree)
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "llmecon")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "llmecon":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in modules else target)
    return {m for m in out if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) for name, path in modules.items()}


def _rank(module: str) -> int | None:
    parts = module.split(".")
    return RANKS.get(parts[1]) if len(parts) > 1 else None


def test_every_folder_and_root_module_has_a_rank():
    tops = {p.stem if p.is_file() else p.name for p in PKG.iterdir()
            if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))}
    tops -= {"__init__", "__main__"}
    assert tops <= set(RANKS), f"unranked: {sorted(tops - set(RANKS))}"


def test_imports_point_down_only():
    bad = []
    for module, deps in _graph().items():
        rank = _rank(module)
        if rank is None:  # llmecon/__init__ (lazy public API) and __main__ sit above everything
            continue
        for dep in deps:
            dep_rank = _rank(dep)
            if dep_rank is not None and dep_rank > rank:
                bad.append(f"{module} (rank {rank}) imports {dep} (rank {dep_rank})")
    assert not bad, "imports pointing up:\n" + "\n".join(sorted(bad))


def _forbidden(graph: dict[str, set[str]]) -> list[str]:
    """``module imports dep`` for every import FORBIDDEN names that ALLOWED does not list."""
    bad = []
    for module, deps in graph.items():
        parts = module.split(".")
        for dep in deps:
            top = dep.split(".")[1] if dep.count(".") else dep
            if len(parts) > 1 and top in FORBIDDEN.get(parts[1], ()) and (module, dep) not in ALLOWED:
                bad.append(f"{module} imports {dep}")
    return sorted(bad)


def test_step_reads_no_catalogue():
    bad = _forbidden(_graph())
    assert not bad, "step/ takes specs and a profile (DESIGN.md §2):\n" + "\n".join(bad)


def test_the_forbidden_import_check_can_fail():
    graph = {"llmecon.step.inference": {"llmecon.catalog.efficiency", "llmecon.spec.plan"},
             "llmecon.step.speculative": {"llmecon.catalog.models"}, "llmecon.econ.moe": {"llmecon.catalog.models"}}
    assert _forbidden(graph) == ["llmecon.step.inference imports llmecon.catalog.efficiency"]


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_checker_finds_a_cycle_and_an_upward_import(tmp_path, monkeypatch):
    """The checks above can fail: a two-module package with a cycle and an upward import."""
    pkg = tmp_path / "llmecon"
    (pkg / "spec").mkdir(parents=True)
    (pkg / "econ").mkdir()
    for folder in (pkg, pkg / "spec", pkg / "econ"):
        (folder / "__init__.py").write_text("")
    (pkg / "spec" / "a.py").write_text("def f():\n    from ..econ.b import g\n")
    (pkg / "econ" / "b.py").write_text("from ..spec.a import f\n")
    monkeypatch.setattr(__import__(__name__), "PKG", pkg)
    with pytest.raises(AssertionError, match="spec.a .rank 1. imports llmecon.econ.b"):
        test_imports_point_down_only()
    with pytest.raises(AssertionError, match="import cycles"):
        test_no_import_cycles()


@pytest.mark.parametrize("path", sorted(PKG.rglob("*.py")), ids=lambda p: str(p.relative_to(PKG)))
def test_module_size(path):
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{path.name}: {lines} lines (split it by concept; at most {MAX_LINES})"


def test_a_dozen_modules_at_the_root():
    root = [p.name for p in PKG.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert len(root) <= MAX_ROOT_MODULES, sorted(root)


def _long_lines(paths) -> list[str]:
    """``path:line: columns`` for every line longer than MAX_COLUMNS characters."""
    out = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if len(line) > MAX_COLUMNS:
                out.append(f"{path}:{number}: {len(line)} columns")
    return out


def test_lines_at_most_120_columns():
    paths = sorted(p for folder in LINE_CHECKED for p in (ROOT / folder).rglob("*.py")
                   if "__pycache__" not in p.parts)
    assert len(paths) > 100  # the folders were found
    long = _long_lines(paths)
    assert not long, f"lines over {MAX_COLUMNS} columns (wrap them):\n" + "\n".join(long)


def test_the_line_checker_finds_a_long_line(tmp_path):
    """The check above can fail: a 121-column line is reported, a 120-column one (multi-byte
    characters count once) is not."""
    ok = tmp_path / "ok.py"
    ok.write_text("x = '" + "×" * 114 + "'\n", encoding="utf-8")
    bad = tmp_path / "bad.py"
    bad.write_text("# fine\n" + "y = 1  # " + "z" * 112 + "\n", encoding="utf-8")
    assert _long_lines([ok]) == []
    assert _long_lines([bad]) == [f"{bad}:2: 121 columns"]
