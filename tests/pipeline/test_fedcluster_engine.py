"""The federated_nn engine (FedCluster paper) on tiny synthetic image data: its table, its pairing of
methods on one partition, and an exact resume after an interruption."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedrepro.algorithms import METHODS
from fedrepro.engines.federated_nn import COLUMNS
from fedrepro.experiments.execute import execute_run
from fedrepro.experiments.runtable import run_id_of
from fedrepro.schemas import check
from fedrepro.experiments.store import RunFiles

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def image_inputs(write_run_inputs) -> dict:
    """A prepared view as rule `view` writes it: 300 images 1x6x6 (30 per class), 100 test images."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(10), 30)
    x = (rng.normal(size=(300, 1, 6, 6)) + y[:, None, None, None] / 5).astype(np.float32)
    return write_run_inputs("mnist-crop28_pool2", "mnist", x_train=x, y_train=y, x_test=x[::3], y_test=y[::3])


def nn_spec(**overrides) -> dict:
    spec = {
        "paper": "fedcluster", "engine": "federated_nn", "method": "fedcluster", "algorithm": "fedcluster",
        "dataset": "mnist", "view": "crop28_pool2", "model": "mlp", "n_classes": 10, "n_devices": 20,
        "samples_per_device": 10, "rho_device": 0.5, "remainder": "balanced", "M": 2, "clustering": "random",
        "cluster_order": "reshuffle", "frac": 0.5, "E": 2, "B": 3, "local_opt": "sgd", "momentum": 0.5,
        "betas": [0.9, 0.999], "eps": 1e-8, "mu": 0.1, "lr_fedavg": 0.2, "fc_lr_rule": "div_M", "lr_csgd": 0.05,
        "csgd_batch": 6, "backend": "auto", "rounds": 4, "eval_every": 2, "train_eval_subsample": None, "seeds": 2,
        "checkpoint_every": 1,
    }
    spec.update(overrides)
    check(spec, "federated_nn_run.schema.yaml", "test spec")
    return spec


def run(tmp: Path, name: str, spec: dict, inputs: dict) -> tuple[pd.DataFrame, dict, RunFiles]:
    rid = run_id_of(spec)
    files = RunFiles(tmp / name / rid)
    execute_run(rid, spec, files, inputs["prepared"], inputs["data_provenance"], device="cpu",
                log_path=tmp / f"{name}.log", repo=REPO)
    return pd.read_csv(files.metrics), json.loads(files.record.read_text()), files


def test_the_engine_writes_the_expected_table(tmp_path, image_inputs):
    metrics, record, files = run(tmp_path, "fc", nn_spec(), image_inputs)
    assert list(metrics.columns) == COLUMNS
    assert metrics.groupby("seed")["round"].apply(list).to_dict() == {0: [0, 2, 4], 1: [0, 2, 4]}
    last = metrics[metrics["round"] == 4]
    # 10 of 20 devices a round (5 per cycle of 2 clusters) x E x B samples, M updates a round
    assert (last["samples"] == 4 * 10 * 2 * 3).all() and (last["updates"] == 4 * 2).all()
    assert (last["clients"] == 4 * 10).all()
    assert metrics[["train_loss", "test_loss"]].gt(0).all().all()
    assert metrics["test_accuracy"].between(0, 1).all()
    first = metrics[metrics["round"] == 0].set_index("seed")["train_loss"]
    assert (last.set_index("seed")["train_loss"] < first).all()  # it learns
    assert record["summary"]["backend"] == "vectorized" and record["summary"]["lr"] == pytest.approx(0.1)
    assert record["diverged"] is False and not files.checkpoint.exists()


def test_methods_of_one_seed_share_devices_and_W0(tmp_path, image_inputs):
    """FedAvg, FedCluster (random or rho_cluster clusters, any optimizer) and centralized SGD of one seed
    train on the same device partition from the same W0 (paper §IV-A;
    docs/papers/fedcluster.md R3); seeds differ."""
    specs = {
        "fedcluster": nn_spec(),
        "fedavg": nn_spec(method="fedavg", algorithm="fedavg"),
        "adam": nn_spec(method="fedavg", algorithm="fedavg", local_opt="adam", lr_fedavg=1e-3),
        "csgd": nn_spec(method="csgd", algorithm="csgd"),
        "rho_cluster": nn_spec(M=10, clustering="rho_cluster", rho_cluster=0.5, frac=0.5),
    }
    seeds = {name: run(tmp_path, name, spec, image_inputs)[1]["summary"]["seeds"] for name, spec in specs.items()}
    for key in ("partition_sha256", "W0_sha256"):
        for seed in ("0", "1"):
            assert len({s[seed][key] for s in seeds.values()}) == 1, key
        assert seeds["fedavg"]["0"][key] != seeds["fedavg"]["1"][key]
    assert seeds["fedcluster"]["0"]["clusters_sha256"] != seeds["rho_cluster"]["0"]["clusters_sha256"]
    assert "clusters_sha256" not in seeds["fedavg"]["0"]
    # W0 does not depend on the partition either
    other = run(tmp_path, "rho", nn_spec(rho_device=0.9), image_inputs)[1]["summary"]["seeds"]["0"]
    assert other["W0_sha256"] == seeds["fedavg"]["0"]["W0_sha256"]
    assert other["partition_sha256"] != seeds["fedavg"]["0"]["partition_sha256"]


def test_a_shorter_horizon_is_the_first_rounds_of_a_longer_one(tmp_path, image_inputs):
    """Nothing a round does depends on the horizon: a run of T rounds logs exactly the first T rounds of a run of
    more, for every method (what a scale that shortens a dataset's horizon rests on, docs/performance.md)."""
    for method in METHODS["federated_nn"]:
        short, _, _ = run(tmp_path, f"{method}4", nn_spec(method=method, algorithm=method, rounds=4), image_inputs)
        long, _, _ = run(tmp_path, f"{method}6", nn_spec(method=method, algorithm=method, rounds=6), image_inputs)
        assert long["round"].max() == 6
        pd.testing.assert_frame_equal(short, long[long["round"] <= 4].reset_index(drop=True), check_exact=True)


def test_centralized_sgd_uses_as_many_samples_per_round(tmp_path, image_inputs):
    metrics, record, _ = run(tmp_path, "csgd", nn_spec(method="csgd", algorithm="csgd", seeds=1), image_inputs)
    fc, _, _ = run(tmp_path, "fc", nn_spec(seeds=1), image_inputs)
    assert metrics["samples"].tolist() == fc["samples"].tolist()  # I1: 10 steps of batch 6 = 10 x 2 x 3
    assert record["summary"]["lr"] == 0.05


def test_an_interrupted_run_resumes_to_identical_metrics(tmp_path, image_inputs, kill_at_checkpoint):
    spec = nn_spec(local_opt="sgdm")
    reference, _, _ = run(tmp_path, "reference", spec, image_inputs)
    restore = kill_at_checkpoint(5)  # seed 1, after round 2
    rid = run_id_of(spec)
    files = RunFiles(tmp_path / "killed" / rid)
    with pytest.raises(KeyboardInterrupt):
        execute_run(rid, spec, files, image_inputs["prepared"], image_inputs["data_provenance"], device="cpu",
                    log_path=tmp_path / "killed.log", repo=REPO)
    assert files.checkpoint.exists() and not files.metrics.exists()
    restore()
    execute_run(rid, spec, files, image_inputs["prepared"], image_inputs["data_provenance"], device="cpu",
                log_path=tmp_path / "resumed.log", repo=REPO)
    assert "resuming from checkpoint: seed 1, round 2" in (tmp_path / "resumed.log").read_text()
    pd.testing.assert_frame_equal(pd.read_csv(files.metrics), reference)


def test_a_nan_loss_marks_the_seed_diverged(tmp_path, image_inputs):
    metrics, record, _ = run(tmp_path, "div", nn_spec(lr_fedavg=1e30, seeds=1, rounds=3, eval_every=1), image_inputs)
    assert record["diverged"] is True
    at = record["summary"]["seeds"]["0"]["diverged_at"]
    assert at is not None and metrics["round"].max() == at


def test_seed_workers_give_the_same_bytes(image_inputs, same_with_seed_workers):
    same_with_seed_workers(nn_spec(seeds=3, backend="vectorized"), image_inputs)


@pytest.mark.parametrize("spec", [nn_spec(seeds=2, backend="vectorized"),
                                  nn_spec(lr_fedavg=1e30, seeds=1, rounds=3, eval_every=1)],
                         ids=["converging", "diverging"])
def test_an_evaluation_beside_the_next_round_gives_the_same_bytes(tmp_path, image_inputs, monkeypatch, spec):
    """OVERLAPPED_EVALUATION on the CPU: each evaluation's rows are read after the next round (there SideStream works
    at once), which must change nothing a run writes, a diverged seed's included."""
    from fedrepro.engines import federated_nn

    _, serial_record, serial = run(tmp_path, "serial", spec, image_inputs)
    monkeypatch.setattr(federated_nn, "OVERLAPPED_EVALUATION", {"cpu"})
    _, overlapped_record, overlapped = run(tmp_path, "overlapped", spec, image_inputs)
    assert overlapped.metrics.read_bytes() == serial.metrics.read_bytes()
    assert overlapped_record["summary"] == serial_record["summary"]
    assert overlapped_record["diverged"] == serial_record["diverged"]
