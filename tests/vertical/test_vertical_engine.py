"""The vertical engine end to end on tiny synthetic data: its table, the cadence in local iterations,
the time columns, the task metrics, and an exact resume after an interruption (also within a round)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedrepro.engines import ENGINES
from fedrepro.engines.vertical import assignment, eval_metrics
from fedrepro.experiments.execute import execute_run
from fedrepro.experiments.runtable import run_id_of
from fedrepro.experiments.store import RunFiles
from fedrepro.schemas import check

REPO = Path(__file__).resolve().parents[2]


def spec_of(**overrides) -> dict:
    spec = {
        "paper": "tdcd", "engine": "vertical", "method": "tdcd", "dataset": "pairs", "view": "native",
        "model": "cnn_s2", "out_dim": 10, "test_metric": "accuracy", "N": 2, "K": 3, "Q": 4, "B": 30,
        "lr": 0.1, "t_comm": [10, 100], "iterations": 14, "eval_every": 5, "eval_dense_until": 4,
        "eval_dense_every": 2, "backend": "vectorized", "train_eval_subsample": 50, "seeds": 2,
    }
    spec.update(overrides)
    spec = {k: v for k, v in spec.items() if v is not None}  # None: leave the key out
    check(spec, "vertical_run.schema.yaml", "test spec")
    return spec


def run(tmp: Path, name: str, spec: dict, inputs: dict) -> tuple[pd.DataFrame, dict]:
    rid = run_id_of(spec)
    files = RunFiles(tmp / name / rid)
    execute_run(rid, spec, files, inputs["prepared"], inputs["data_provenance"], device="cpu",
                log_path=tmp / f"{name}.log", repo=REPO)
    return pd.read_csv(files.metrics), json.loads(files.record.read_text())


def test_the_engine_writes_iterations_rounds_times_and_metrics(tmp_path, images):
    table, record = run(tmp_path, "run", spec_of(), images)
    assert list(table.columns) == ["seed", "iteration", "round", "time_tc10", "time_tc100", "train_loss",
                                   "test_loss", "test_accuracy"]
    seed0 = table[table.seed == 0]
    assert seed0.iteration.tolist() == [0, 2, 4, 5, 10, 14]  # dense every 2 up to 4, every 5, the last
    assert seed0["round"].tolist() == [0, 0, 1, 1, 2, 3]  # hub averagings done (Q = 4)
    np.testing.assert_allclose(seed0.time_tc10, seed0.iteration * (30 + 4) / 4)
    np.testing.assert_allclose(seed0.time_tc100, seed0.iteration * (300 + 4) / 4)
    assert seed0.train_loss.iloc[-1] < seed0.train_loss.iloc[0]  # it learns
    assert not table[table.seed == 1].train_loss.equals(seed0.train_loss.reset_index(drop=True))
    assert record["summary"]["backend"] == "vectorized" and record["summary"]["silo_columns"] == [4, 4]


def test_a_binary_task_logs_f1_and_an_lstm_trains(tmp_path, series):
    spec = spec_of(dataset="series", view=None, model="lstm", out_dim=1, test_metric="f1", N=3, K=2, Q=3, B=20,
                   lr=0.5, hidden_total=12, eval_dense_until=None, eval_dense_every=None, seeds=1)
    table, record = run(tmp_path, "lstm", spec, series)
    assert list(table.columns)[-4:] == ["train_loss", "test_loss", "test_accuracy", "test_f1"]
    assert record["summary"]["silo_columns"] == [4, 3, 3]  # 10 columns over 3 silos: the first gets one more
    assert table.train_loss.iloc[-1] < table.train_loss.iloc[0]
    assert ((table.test_f1 >= 0) & (table.test_f1 <= 1)).all()


# (checkpoint_every, the checkpoint after which the run is killed, where it resumes): with Q = 4, iteration
# 3 is within a TDCD round, 8 its end; seed 1 resumes after seed 0 is done
@pytest.mark.parametrize("every, kill_at, expected", [(3, 1, "seed 0, round 3"), (4, 2, "seed 0, round 8"),
                                                      (4, 3, "seed 1, round 4")])
def test_an_interrupted_run_resumes_to_identical_metrics(tmp_path, images, kill_at_checkpoint, every, kill_at,
                                                         expected):
    spec = spec_of(checkpoint_every=every, iterations=10)
    reference, _ = run(tmp_path, "reference", spec, images)
    restore = kill_at_checkpoint(kill_at)
    rid = run_id_of(spec)
    files = RunFiles(tmp_path / "killed" / rid)
    with pytest.raises(KeyboardInterrupt):
        execute_run(rid, spec, files, images["prepared"], images["data_provenance"], device="cpu",
                    log_path=tmp_path / "killed.log", repo=REPO)
    restore()
    execute_run(rid, spec, files, images["prepared"], images["data_provenance"], device="cpu",
                log_path=tmp_path / "resumed.log", repo=REPO)
    assert f"resuming from checkpoint: {expected}" in (tmp_path / "resumed.log").read_text()
    pd.testing.assert_frame_equal(pd.read_csv(files.metrics), reference, check_exact=True)


def test_every_id_is_owned_once_and_shared_assignment_pairs_clients():
    shared = assignment(103, [4, 4], "shared", "k", 0)
    per_silo = assignment(103, [4, 5], "per_silo", "k", 0)
    assert (shared[0] == shared[1]).all() and not (per_silo[0][:50] == per_silo[1][:50] % 4).all()
    for owner, K in [(shared[0], 4), (per_silo[1], 5)]:
        counts = np.bincount(owner, minlength=K)
        assert counts.sum() == 103 and counts.max() - counts.min() <= 1  # array_split: every ID owned


def test_metrics_of_fused_logits():
    import torch

    y = torch.tensor([1, 0, 1, 1, 0])
    z = torch.tensor([[2.0], [1.0], [-1.0], [0.5], [-3.0]])  # predictions 1, 1, 0, 1, 0: tp 2, fp 1, fn 1
    m = eval_metrics(z, y)
    assert m["test_f1"] == pytest.approx(2 * 2 / (2 * 2 + 2)) and m["test_accuracy"] == pytest.approx(0.6)
    logits = torch.arange(12.0).repeat(3, 1)  # class 11 ranks first, 7 fifth, 6 sixth
    m = eval_metrics(logits, torch.tensor([11, 7, 6]))
    assert m["test_accuracy"] == pytest.approx(1 / 3) and m["test_top5"] == pytest.approx(2 / 3)


def test_the_engine_is_registered_with_its_x_columns():
    engine = ENGINES["vertical"]
    assert "iteration" in engine.x and "time_tc10" in engine.x and "time_tc2.5" in engine.x
    # `time`: a figure table's per-panel copy of one time_tc<c> (results/tables.py x_source); no other name
    assert "time" in engine.x and "time_tc" not in engine.x and "time_tcx" not in engine.x
    assert "test_f1" in engine.metrics


@pytest.mark.parametrize("backend", ["vectorized", "loop"])
def test_seed_workers_give_the_same_bytes(images, same_with_seed_workers, backend):
    """Within-round checkpoints (Q > checkpoint_every) included: each group's own checkpoint file."""
    same_with_seed_workers(spec_of(backend=backend, checkpoint_every=3), images)
