"""The library reads top-down (docs/development.md, its layer table): every import of src/fedrepro, lazy ones
included, goes to the importer's own layer or one above it in the table, and no two units (a package or a top-level
module) import each other, directly or around a loop."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "fedrepro"


def layers() -> dict[str, int]:
    """Unit (a package or top-level module of fedrepro, by name) -> its row in the table, top row 0."""
    text = (ROOT / "docs" / "development.md").read_text()
    table = text[text.index("| layer | modules |"):].split("\n\n")[0].splitlines()[2:]
    out = {}
    for row, line in enumerate(table):
        for name in re.findall(r"`([\w.]+/?)`", line.split("|")[2]):
            if name.endswith(".py") or name.endswith("/"):
                out[name.removesuffix(".py").removesuffix("/")] = row
    return out


def imports(src: Path = SRC) -> list[tuple[str, str, str]]:
    """(importing unit, imported unit, where) for every import of one fedrepro unit by another."""
    out = []
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        unit = parts[0]
        package = ("fedrepro",) + (parts if path.name == "__init__.py" else parts[:-1])
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:  # relative: resolved against the package
                names = [".".join(package[:len(package) - node.level + 1] + tuple(filter(None, [node.module])))]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                target = name.split(".")
                if target[0] == "fedrepro" and len(target) > 1 and target[1] != unit:
                    out.append((unit, target[1], f"{path.relative_to(src.parent)}:{node.lineno} imports {name}"))
    return out


def test_every_unit_of_the_library_has_a_layer():
    units = {p.stem if p.is_file() else p.name for p in SRC.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}
    assert units - set(layers()) == set()
    assert set(layers()) - units == {"scripts"}  # the rules' entry points, outside the package


def test_no_import_reaches_down_the_table():
    rank = layers()
    upward = [where for unit, target, where in imports() if rank[target] > rank[unit]]
    assert upward == []


def test_no_two_units_import_each_other_even_around_a_loop():
    graph: dict[str, set[str]] = {}
    for unit, target, _ in imports():
        graph.setdefault(unit, set()).add(target)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph.get(start, ()))

    assert sorted(u for u in graph if reaches(u, u, set())) == []


@pytest.mark.parametrize("source, expected", [
    ("from fedrepro.claims.ledger import x", ["claims"]),
    ("from ..claims import ledger", ["claims"]),  # relative, from inside results/
    ("from .store import x", []),  # its own unit
    ("import fedrepro.plots.convergence", ["plots"]),
    ("import numpy", []),
])
def test_imports_are_read_absolute_relative_and_lazy(tmp_path, source, expected):
    package = tmp_path / "fedrepro"
    (package / "results").mkdir(parents=True)
    (package / "results" / "tables.py").write_text(f"def f():\n    {source}\n")  # a lazy import
    assert [(unit, target) for unit, target, _ in imports(package)] == [("results", t) for t in expected]
