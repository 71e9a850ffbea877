"""The code a run records (run.json code_sha256, training_code.py): the sources that decide its engine's floats, and
only those."""

from __future__ import annotations

import ast
import dataclasses
import shutil
from pathlib import Path

import pytest

from fedrepro import numerics
from fedrepro.algorithms import METHODS
from fedrepro.engines import ENGINES
from fedrepro.engines.context import code_identity
from fedrepro.training_code import CODE, SHARED, SOURCE_ROOT, code_sha256, source_files

# Modules a declared module imports that decide no floats, and why (every other import must be declared)
NO_FLOATS = {
    "errors.py": "error messages",
    "numerics.py": "its entries for the engine are hashed (code_sha256), not the file with every engine's",
    "training_code.py": "the hash itself (engines/context.py imports it for checkpoints)",
    "utils/atomic.py": "writes files",
    "data/registry.py": "where data comes from and its row counts (limits); the bytes a run read are hashed in run.json",
    "data/formats/safe_pickle.py": "reads the user's MIMIC-III pickles when the data is prepared, not in a run",
}
REGISTRY = "algorithms/__init__.py"  # imports every engine's methods; a run builds its own engine's


def module_file(name: str) -> str | None:
    """src/fedrepro-relative file of module `name` (fedrepro.x.y), None when it is not a module."""
    path = SOURCE_ROOT.joinpath(*name.split(".")[1:])
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate.relative_to(SOURCE_ROOT).as_posix()
    return None


def imports(relative: str) -> set[str]:
    """The fedrepro modules a source file imports (a name imported from a package: its submodule where it is one)."""
    found = set()
    for node in ast.walk(ast.parse((SOURCE_ROOT / relative).read_text())):
        if isinstance(node, ast.Import):
            found |= {module_file(a.name) for a in node.names if a.name.startswith("fedrepro.")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fedrepro"):
            found |= {module_file(f"{node.module}.{a.name}") or module_file(node.module) for a in node.names}
    return found - {None}


@pytest.mark.parametrize("engine", ENGINES)
def test_every_module_a_declared_module_imports_is_declared_or_decides_no_floats(engine):
    declared = {f.relative_to(SOURCE_ROOT).as_posix() for f in source_files(engine)}
    assert all((SOURCE_ROOT / unit).exists() for unit in (*SHARED, *CODE[engine]))
    undeclared = {f"{module} (imported by {source})" for source in declared - {REGISTRY}
                  for module in imports(source) - declared - set(NO_FLOATS)}
    assert not undeclared, f"declare these in training_code.CODE[{engine!r}] or NO_FLOATS: {sorted(undeclared)}"
    builders = [type(ENGINES[engine]), *METHODS[engine].values()]  # the engine and its methods (classes or records)
    assert {module_file(b.__module__) for b in builders} <= declared


def test_every_engine_has_a_declaration():
    assert set(CODE) == set(ENGINES)


@pytest.fixture
def sources(tmp_path) -> Path:
    """A copy of src/fedrepro to edit."""
    root = tmp_path / "fedrepro"
    shutil.copytree(SOURCE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def edited(root: Path, relative: str, old: str, new: str) -> dict[str, str]:
    """Every engine's code hash once `old` (which must occur) is replaced by `new` in the copy's file (hashed once a
    process: the copy is hashed after the edit only)."""
    path = root / relative
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    return {engine: code_sha256(engine, root) for engine in ENGINES}


def test_a_kernel_change_marks_the_finite_sum_engine_alone(sources):
    before = {engine: code_sha256(engine) for engine in ENGINES}
    after = edited(sources, "algorithms/kernels.py", "from __future__ import annotations\n",
                   "from __future__ import annotations\nEPS = 1e-12\n")
    assert [e for e in ENGINES if after[e] != before[e]] == ["finite_sum"]


@pytest.mark.parametrize("relative, old, new", [
    ("algorithms/kernels.py", "from __future__ import annotations\n",
     "from __future__ import annotations\n# a comment\n\n"),
    ("algorithms/kernels.py", '"""The finite-sum algorithms', '"""The finite sum\'s algorithms'),  # the docstring
    ("plots/__init__.py", "from __future__ import annotations\n", "from __future__ import annotations\nX = 1\n"),
])
def test_prose_and_modules_outside_training_change_no_hash(sources, relative, old, new):
    before = {engine: code_sha256(engine) for engine in ENGINES}
    assert edited(sources, relative, old, new) == before


def test_a_keying_or_numerics_version_change_marks_that_engine_alone(monkeypatch):
    before = {engine: code_sha256(engine) for engine in ENGINES}
    entry = numerics.KEYING["finite_sum"]
    monkeypatch.setitem(numerics.KEYING, "finite_sum", dataclasses.replace(entry, ignored=entry.ignored[:-1]))
    assert [e for e in ENGINES if code_sha256(e) != before[e]] == ["finite_sum"]
    monkeypatch.undo()
    monkeypatch.setitem(numerics.VERSIONS, "vertical", numerics.numerics_version("vertical") + 1)
    assert [e for e in ENGINES if code_sha256(e) != before[e]] == ["vertical"]


def test_a_checkpoint_is_keyed_by_the_same_hash():
    assert all(code_identity(engine)["sources_sha256"] == code_sha256(engine) for engine in ENGINES)
