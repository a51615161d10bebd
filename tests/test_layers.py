"""How the code hangs together: the package never imports flows/, no module imports one that imports
it back, and read-only commands load neither Prefect nor the PII libraries."""

import ast
import graphlib
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

PACKAGE = REPO / "lessonweaver"


def _imports(path: Path) -> set[str]:
    """The top-level modules of this repository a file imports, anywhere in it (lazy imports too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n for n in names if n.split(".")[0] in ("lessonweaver", "flows")}
    return found


def _module(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


GRAPH = {_module(p): _imports(p) for p in [*PACKAGE.glob("*.py"), *(REPO / "flows").glob("*.py")]}
# `from lessonweaver import store` names the package too; the package's own __init__ is no layer.
EDGES = {m: {i for i in deps if i in GRAPH and i not in (m, "lessonweaver")} for m, deps in GRAPH.items()
         if m != "lessonweaver"}


def test_the_package_never_imports_flows():
    assert {m: sorted(d) for m, d in GRAPH.items()
            if m.startswith("lessonweaver") and any(i.startswith("flows") for i in d)} == {}


def test_no_import_cycles():
    try:
        list(graphlib.TopologicalSorter(EDGES).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


@pytest.mark.parametrize("argv", [["sql", "--help"], ["review", "--help"], ["export", "--help"]])
def test_read_only_commands_load_neither_prefect_nor_pii_libraries(argv):
    code = ("import sys\nfrom lessonweaver import cli, commands, explore, review, export, store, render\n"
            "try:\n    cli.main(%r)\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('prefect', 'phonenumbers', 'stdnum', 'ahocorasick')))"
            % argv)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"

