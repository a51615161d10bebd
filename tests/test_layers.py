"""How the code hangs together: the package never imports flows/, no module imports one that imports
it back, read-only commands load neither Prefect nor the PII libraries, functions are short, and the
engine's SQL files are each used and say what they take."""

import ast
import graphlib
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from conftest import REPO

PACKAGE = REPO / "lessonweaver"
MODULES = [*PACKAGE.glob("*.py"), *(REPO / "flows").glob("*.py")]


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


GRAPH = {_module(p): _imports(p) for p in MODULES}
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


@pytest.mark.parametrize("argv", [["sql", "--help"], ["review", "--help"], ["export", "--help"], ["show", "--help"]])
def test_read_only_commands_load_neither_prefect_nor_pii_libraries(argv):
    code = ("import sys\nfrom lessonweaver import cli, commands, explore, review, export, store, render, timeline\n"
            "try:\n    cli.main(%r)\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('prefect', 'phonenumbers', 'stdnum', 'ahocorasick')))"
            % argv)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


MAX_FUNCTION_LINES = 60


def test_functions_are_short_enough_to_read_at_once():
    lengths = {}
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lengths[(path.relative_to(REPO).as_posix(), node.name)] = node.end_lineno - node.lineno + 1
    too_long = {f"{path}: {name} ({n} lines)" for (path, name), n in lengths.items()
                if n > MAX_FUNCTION_LINES}
    assert too_long == set()


ENGINE_SQL = sorted(p for stage in ("stage", "load", "weave", "audit", "forget", "timeline", "redetect") for p in (REPO / "sql" / stage).glob("*.sql"))


def test_every_engine_sql_file_is_used():
    source = "\n".join(p.read_text(encoding="utf-8") for p in MODULES)
    names = [p.relative_to(REPO / "sql").as_posix() for p in ENGINE_SQL]
    assert names
    assert [n for n in names if f'"{n}"' not in source] == []


@pytest.mark.parametrize("path", ENGINE_SQL, ids=lambda p: p.relative_to(REPO / "sql").as_posix())
def test_engine_sql_files_say_what_they_do_and_name_their_parameters(path: Path):
    text = path.read_text(encoding="utf-8")
    header = "\n".join(line for line in text.splitlines()[:next(
        i for i, line in enumerate(text.splitlines()) if not line.startswith("--"))])
    assert len(header) > 40, "a comment at the top says what the file does"
    used = {p for statement in duckdb.extract_statements(text) for p in statement.named_parameters}
    assert {p for p in used if f"${p}" not in header} == set(), "the header names every parameter"
