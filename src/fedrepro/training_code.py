"""Which sources decide an engine's floats, and their hash: the code a run was trained by (run.json `code_sha256`,
checked by the audit and listed for retraining by `fedrepro stale-runs`) and the code a checkpoint must have been
saved by to be resumed (engines/context.py code_identity).

A run id keys a run's settings and its engine's numerics version, not its code: the numerics-version rule
(docs/development.md, "Numerics versions") is the human statement that a change of the floats gets a new id. The
hash is the machine's check of the same thing, recorded with each run and never part of its id.

CODE declares each engine's sources (paths under src/fedrepro; a folder stands for its .py files): its engine
modules, the algorithm modules that build its methods, the kernels, objectives, networks and data draws it trains
with. SHARED are every engine's: the random streams (seeding, and utils/digest, whose digests key them), the
client draws (sampling), the contract, driver and run context, and the method registry and shape. numerics.py is not hashed as a file: the
engine's own entries (its version and keying) are, so that a change to another engine's keying marks none of this
engine's runs. Declared, not derived from the imports, because the imports over-reach (algorithms/__init__.py, the
registry, imports every engine's methods) and miss what is read by name; tests/engines/test_training_code.py checks
that every module a declared one imports is declared or named there as deciding no floats. The data's bytes are
not code: run.json hashes the files a run read (data_files).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import json
import tokenize
from pathlib import Path
from typing import Any

from fedrepro.numerics import keying, numerics_version

SOURCE_ROOT = Path(__file__).resolve().parent  # src/fedrepro

SHARED = ("seeding.py", "utils/digest.py", "sampling.py", "engines/context.py", "engines/contract.py",
          "engines/driver.py", "algorithms/__init__.py", "algorithms/method.py")
NETWORKS = ("nn", "models")
CODE: dict[str, tuple[str, ...]] = {
    "finite_sum": ("engines/finite_sum.py", "algorithms/common.py", "algorithms/kernels.py", "algorithms/fedpage.py",
                   "algorithms/scaffold.py", "algorithms/fedavg.py", "objectives/__init__.py",
                   "objectives/finite_sum.py"),
    "monte_carlo": ("engines/monte_carlo.py", "algorithms/fedvr.py", "algorithms/probabilistic_agents.py",
                    "objectives/least_squares.py"),
    "federated_nn": ("engines/federated_nn.py", "algorithms/fedcluster.py", "data/partitions.py", *NETWORKS),
    "async": ("engines/asynchronous.py", "algorithms/asynchronous.py", "asynchrony", "data/partitions.py",
              *NETWORKS),
    "vertical": ("engines/vertical.py", "engines/vertical_inputs.py", "algorithms/tdcd.py", "data/vertical.py",
                 "data/mimic3_ihm.py", "vertical_time.py", *NETWORKS),
}


def source_files(engine: str, root: Path = SOURCE_ROOT) -> list[Path]:
    """The files of SHARED and of the engine's CODE under `root`, each once, in name order."""
    files = set()
    for unit in (*SHARED, *CODE.get(engine, ())):
        path = root / unit
        files |= set(path.rglob("*.py")) if path.is_dir() else {path}
    return sorted(files)


def source_sha256(path: Path) -> str:
    """The sha256 of a Python file's tokens, its comments, blank lines and docstrings (statements that are only a
    string) aside: an edit of the prose decides no float and marks no run. (Tokens as this Python reads them.)"""
    structure = (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE)
    kept: list[str] = []
    line: list[tokenize.TokenInfo] = []
    for token in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL):
            continue
        line.append(token)
        if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            body = [t for t in line if t.type not in structure]
            if body and all(t.type == tokenize.STRING for t in body):  # a docstring: its indentation alone stays
                line = [t for t in line if t.type in (tokenize.INDENT, tokenize.DEDENT)]
            kept += [tokenize.tok_name[t.type] if t.type in structure else t.string for t in line]
            line = []
    return hashlib.sha256("\0".join(kept).encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=None)
def _sources_sha256(engine: str, root: Path) -> str:
    lines = [f"{f.relative_to(root).as_posix()}\0{source_sha256(f)}\n" for f in source_files(engine, root)]
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


def code_sha256(engine: str, root: Path = SOURCE_ROOT) -> str:
    """The sha256 of what decides the floats of `engine`'s runs: its sources (source_files, hashed as
    source_sha256) and its numerics version and keying (numerics.py)."""
    entries = json.dumps({"numerics": numerics_version(engine), "keying": dataclasses.asdict(keying(engine))},
                         sort_keys=True)
    return hashlib.sha256(f"{_sources_sha256(engine, root)}\0{entries}".encode("utf-8")).hexdigest()


# Why a run was not trained by this code (code_change): its run.json records another code hash, or none (recorded
# before runs recorded it, 2026-12-08)
OTHER_CODE, BEFORE_CODE_HASH = "trained by other code", "predates the code hash"


def code_change(record: dict[str, Any], engine: str) -> str | None:
    """OTHER_CODE or BEFORE_CODE_HASH when a run record (run.json) of `engine` was not trained by this code; None
    when it was. The audit reports it, and `fedrepro stale-runs` lists such runs for retraining."""
    recorded = record.get("code_sha256")
    if recorded is None:
        return BEFORE_CODE_HASH
    return OTHER_CODE if recorded != code_sha256(engine) else None
