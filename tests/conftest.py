"""Fixtures shared by every test folder."""

import json
from pathlib import Path

import numpy as np
import pytest

from fedrepro.data import absolute_mirror_env

# `FEDREPRO_DATA_MIRROR=../shared/datasets make test`, as the README writes it, names a folder relative to where the
# tests start: made absolute before any test reads it or copies the workflow elsewhere
absolute_mirror_env()


def pytest_collection_modifyitems(items):
    """The slow end-to-end tests first, in their order: `make test` spreads the tests over processes (pytest -n), and
    the longest must start at once, with the short ones filling the time beside them, not end the run alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def write_run_inputs(tmp_path: Path):
    """write(name, dataset, **arrays) -> the `prepared` and `data_provenance` arguments of execute_run:
    data/<name>.npz and a mirror provenance record of `dataset`, as rules prepare and download leave them."""

    def write(name: str, dataset: str, **arrays: np.ndarray) -> dict:
        folder = tmp_path / "data"
        folder.mkdir(parents=True, exist_ok=True)
        prepared = folder / f"{name}.npz"
        np.savez(prepared, **arrays)
        provenance = folder / f"{dataset}.PROVENANCE.json"
        provenance.write_text(json.dumps({"dataset": dataset, "files": [
            {"name": dataset, "sha256": "ab" * 32, "bytes": 1, "source": "mirror", "origin": dataset,
             "verified_by": "mirror-manifest"}]}))
        return {"prepared": prepared, "data_provenance": [provenance]}

    return write


@pytest.fixture
def kill_at_checkpoint(monkeypatch):
    """kill_at_checkpoint(n): the n-th checkpoint a run saves is written, then the run is interrupted
    (KeyboardInterrupt, as a killed job); call the returned `restore()` to save normally again."""
    from fedrepro.engines import context

    original = context.RunContext.save_checkpoint

    def arm(n: int):
        saves = {"n": 0}

        def save_then_fail(self, state):
            original(self, state)
            saves["n"] += 1
            if saves["n"] == n:
                raise KeyboardInterrupt

        monkeypatch.setattr(context.RunContext, "save_checkpoint", save_then_fail)
        return lambda: monkeypatch.setattr(context.RunContext, "save_checkpoint", original)

    return arm


@pytest.fixture
def same_with_seed_workers(tmp_path):
    """same_with_seed_workers(spec, inputs, workers=2): train the run one seed group after another and with `workers`
    seed workers (processes at once, experiments/seed_workers.py); assert the same metrics.csv byte for byte, the
    same summary, the record's worker count and no checkpoint left behind. Returns both records."""
    from fedrepro.experiments.execute import execute_run
    from fedrepro.experiments.runtable import run_id_of
    from fedrepro.experiments.store import RunFiles

    def check(spec: dict, inputs: dict, workers: int = 2) -> tuple[dict, dict]:
        rid = run_id_of(spec)
        records, metrics = [], []
        for name, n in (("serial", 1), ("workers", workers)):
            files = RunFiles(tmp_path / name / rid)
            records.append(execute_run(rid, spec, files, inputs["prepared"], inputs["data_provenance"],
                                       device="cpu", seed_workers=n, log_path=tmp_path / f"{name}.log"))
            metrics.append(files.metrics.read_bytes())
            assert [p for p in files.checkpoints() if p.exists()] == []
        assert metrics[0] == metrics[1]
        assert records[0]["summary"] == records[1]["summary"]
        assert records[0]["seed_workers"] == 1
        return records[0], records[1]

    return check
