"""The async engine's learning phase on tiny synthetic images: it replays the trace exactly, whatever the
batching, and reduces to synchronous FedAvg and to AsySG where the paper says it does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from fedrepro.algorithms.asynchronous import AsyncRounds
from fedrepro.engines import asynchronous, context
from fedrepro.experiments.execute import execute_run
from fedrepro.experiments.runtable import run_id_of
from fedrepro.nn import DeviceData, FlatModel, LocalOptimizer, LocalTrainer
from fedrepro.models import seeded_model
from fedrepro.experiments.store import RunFiles
from fedrepro.schemas import check

REPO = Path(__file__).resolve().parents[2]
METRIC_COLUMNS = ["train_loss", "train_accuracy", "test_loss", "test_accuracy"]


@pytest.fixture
def images(write_run_inputs) -> dict:
    """A prepared view: 400 images 1x6x6 (40 per class, classes separable), 100 test images."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(10), 40)
    x = (rng.normal(size=(400, 1, 6, 6)) + y[:, None, None, None] / 4).astype(np.float32)
    return write_run_inputs("fashion_mnist-pool2", "fashion_mnist", x_train=x, y_train=y, x_test=x[::4],
                            y_test=y[::4])


def spec_of(**overrides) -> dict:
    spec = {
        "paper": "defedavg", "engine": "async", "method": "defedavg_niid", "algorithm": "defedavg_niid",
        "dataset": "fashion_mnist", "view": "pool2", "model": "mlp", "n_classes": 10, "n_clients": 10,
        "samples_per_client": 40, "partition": "classes", "classes_per_client": 2, "n": 3, "K": 3, "B": 4,
        "lr_global": 1.0, "lr_local": 0.05, "flops_per_iteration": 17.0e6, "model_bytes": 2.2e6,
        "fastest_flops": 1.0e10, "speed_model": "literal", "speed_range": [1.0, 5.0], "link_bps": 4.0e8,
        "compute_time_scale": 1.0, "backend": "vectorized", "time_horizon": 2.0, "eval_every_time": 0.25,
        "train_eval_subsample": 200, "test_eval_subsample": 50, "seeds": 2, "checkpoint_every": 3,
    }
    spec.update(overrides)
    for key in [k for k, v in overrides.items() if v is None and k in ("time_horizon", "eval_every_time")]:
        del spec[key]
    check(spec, "async_run.schema.yaml", "test spec")
    return spec


def run(tmp: Path, name: str, spec: dict, inputs: dict) -> tuple[pd.DataFrame, dict]:
    rid = run_id_of(spec)
    files = RunFiles(tmp / name / rid)
    execute_run(rid, spec, files, inputs["prepared"], inputs["data_provenance"], device="cpu",
                log_path=tmp / f"{name}.log", repo=REPO)
    return pd.read_csv(files.metrics), json.loads(files.record.read_text())


def test_a_time_axis_run_logs_the_server_model_current_at_each_checkpoint(tmp_path, images):
    metrics, record = run(tmp_path, "t", spec_of(), images)
    assert list(metrics.columns) == ["seed", "round", "virtual_time", "sim_time", *METRIC_COLUMNS, "uploads",
                                     "staleness_mean", "staleness_max"]
    for _, seed in metrics.groupby("seed"):
        assert seed["virtual_time"].tolist() == pytest.approx([0.25 * k for k in range(9)])
        assert (seed["sim_time"] <= seed["virtual_time"] + 1e-12).all()  # formed by the checkpoint time
        assert seed["round"].is_monotonic_increasing and seed["uploads"].is_monotonic_increasing
        assert seed["round"].iloc[-1] > 5 and seed["train_loss"].iloc[-1] < seed["train_loss"].iloc[0]
    facts = record["summary"]["seeds"]["0"]
    assert sum(facts["participation"]) == metrics[metrics.seed == 0]["uploads"].iloc[-1]
    assert facts["trace"]["consumed_fraction"] < 1  # DeFedAvg-nIID overwrites unsent updates


def test_results_do_not_depend_on_batching(tmp_path, images):
    """Trainings one at a time at the round that consumes them (lazy), all of a round at once, and every
    training as soon as its start version exists (eager) give the same parameters after every round."""
    spec = spec_of(algorithm="fedbuff", method="fedbuff", fedbuff_staleness="sqrt", n=2, seeds=1)
    trainer = _trainer(tmp_path, spec, images)
    built = trainer.method
    out = {}
    for name, (lookahead, ahead, call) in {"lazy, one at a time": (0, 0, 1), "lazy": (0, 0, None),
                                           "ahead": (16, 64, None), "eager": (10**6, 10**9, None)}.items():
        method = AsyncRounds(built.algorithm, built.eta, built.trace, built.trainer, built.streams, built.W0,
                             lookahead=lookahead, ahead=ahead, call=call)
        state, out[name] = method.init(), []
        for r in range(built.trace.n_rounds):
            state, _ = method.round(state, r)
            out[name].append(state["w"])
    assert len(out["lazy"]) > 5
    for name, models in out.items():
        torch.testing.assert_close(torch.stack(models), torch.stack(out["lazy"]), rtol=1e-6, atol=1e-8, msg=name)


def _trainer(tmp_path: Path, spec: dict, images: dict):
    """Seed 0's trainer of a run, as the engine starts it."""
    import logging

    arrays = dict(np.load(images["prepared"]))
    ctx = context.RunContext("v", spec, "cpu", tmp_path / "c.pt", logging.getLogger("test"), show_progress=False)
    return asynchronous.AsyncSetup(spec, arrays, ctx).start([0])


def _equal_speeds(**overrides) -> dict:
    return spec_of(partition="iid", slowdowns=[1.0] * 10, model_bytes=0.0, n=10, **overrides)


def test_defedavg_iid_with_equal_speeds_and_free_communication_is_synchronous_fedavg(tmp_path, images):
    """n = N, equal speeds, zero communication: every round aggregates one fresh training of every client,
    i.e. FedAvg with full participation, written out here with the client layer."""
    spec = _equal_speeds(algorithm="defedavg_iid", method="defedavg_iid", lr_global=0.7, rounds=6, eval_every=6,
                         time_horizon=None, eval_every_time=None, seeds=1)
    metrics, _ = run(tmp_path, "iid", spec, images)

    setup_env = asynchronous.Environment(spec, dict(np.load(images["prepared"])), "cpu")
    table = torch.from_numpy(setup_env.partition(0))
    module = seeded_model("mlp", (1, 6, 6), 10, "W0", "fashion_mnist", "pool2", "mlp", 0)
    flat = FlatModel(module)
    w = flat.flatten()
    local = LocalTrainer(module, DeviceData(setup_env.images, setup_env.labels, table), LocalOptimizer("sgd", 0.05),
                         3, 4, "loop")
    streams = context.RunContext("x", spec, "cpu", tmp_path / "c.pt", None).streams(0)
    everyone = torch.arange(10)
    for t in range(6):
        finals = local.run(w, local.draw(streams, t, everyone))  # client i's t-th training
        w = w - 0.7 * (w - finals).mean(dim=0)
    from fedrepro.nn import evaluate

    train = evaluate(flat, w, setup_env.images, setup_env.labels, *asynchronous.pooled_train_set(
        table, 200, asynchronous.torch_generator("train_eval", setup_env.key, 0)))
    assert metrics["train_loss"].iloc[-1] == pytest.approx(train["loss"], rel=1e-5)
    assert metrics["staleness_max"].iloc[-1] == 0 and metrics["uploads"].iloc[-1] == 60


def test_asysg_is_defedavg_iid_with_one_local_step(tmp_path, images):
    common = {"partition": "iid", "K": 1, "lr_local": 1.0, "lr_global": 0.3, "n": 4, "seeds": 1}
    asysg, _ = run(tmp_path, "asysg", spec_of(algorithm="asysg", method="asysg", **common), images)
    iid, _ = run(tmp_path, "iid", spec_of(algorithm="defedavg_iid", method="defedavg_iid", **common), images)
    pd.testing.assert_frame_equal(asysg, iid, check_exact=True)


def test_the_trace_depends_on_the_fleet_not_on_rates_model_or_algorithm_settings(tmp_path, images):
    _, a = run(tmp_path, "a", spec_of(seeds=1), images)
    _, b = run(tmp_path, "b", spec_of(seeds=1, lr_local=0.2, lr_global=0.5, model="mlp"), images)
    _, c = run(tmp_path, "c", spec_of(seeds=1, n_clients=20, samples_per_client=20), images)
    facts = [r["summary"]["seeds"]["0"] for r in (a, b, c)]
    assert facts[0]["trace"] == facts[1]["trace"] and facts[0]["iteration_time"] == facts[1]["iteration_time"]
    assert facts[0]["iteration_time"] != facts[2]["iteration_time"][:10]  # another fleet, other speeds


def test_rates_that_the_algorithm_does_not_have_are_refused(tmp_path, images):
    with pytest.raises(Exception, match="lr_global: 1.0"):
        run(tmp_path, "favano", spec_of(algorithm="favano", method="favano", lr_global=0.1), images)
    with pytest.raises(Exception, match="K: 1 and lr_local: 1.0"):
        run(tmp_path, "asysg", spec_of(algorithm="asysg", method="asysg", K=3), images)


def test_an_interrupted_run_resumes_to_identical_metrics(tmp_path, images, kill_at_checkpoint):
    spec = spec_of(algorithm="fedbuff", method="fedbuff", fedbuff_staleness="sqrt", time_horizon=None,
                   eval_every_time=None, rounds=12, eval_every=2, checkpoint_every=4)
    reference, _ = run(tmp_path, "reference", spec, images)
    restore = kill_at_checkpoint(3)  # seed 1, after round 4 (seed 0 saved at rounds 4 and 8)
    rid = run_id_of(spec)
    files = RunFiles(tmp_path / "killed" / rid)
    with pytest.raises(KeyboardInterrupt):
        execute_run(rid, spec, files, images["prepared"], images["data_provenance"], device="cpu",
                    log_path=tmp_path / "killed.log", repo=REPO)
    restore()
    execute_run(rid, spec, files, images["prepared"], images["data_provenance"], device="cpu",
                log_path=tmp_path / "resumed.log", repo=REPO)
    assert "resuming from checkpoint: seed 1, round 4" in (tmp_path / "resumed.log").read_text()
    pd.testing.assert_frame_equal(pd.read_csv(files.metrics), reference)


def test_versions_are_freed_once_no_training_starts_from_them(tmp_path, images):
    """Memory stays bounded: the replay keeps only versions that a training still to be computed starts from
    (a leak kept every version since w^0)."""
    spec = spec_of(algorithm="fedbuff", method="fedbuff", fedbuff_staleness="sqrt", n=2, seeds=1,
                   time_horizon=6.0, eval_every_time=3.0)
    trainer = _trainer(tmp_path, spec, images)
    rounds, held = trainer.trace.n_rounds, []
    for r in range(rounds):
        trainer.advance(r)
        held.append(len(trainer.state["versions"]))
        pending = set(trainer.trace.start_version[trainer.trace.round_bounds[r + 1]:])  # starts of trainings to come
        assert set(trainer.state["versions"]) <= pending | {r + 1}
    assert rounds > 50 and max(held) <= 1 + int(trainer.trace.staleness.max())


def test_a_round_leaves_the_state_it_is_given_alone(tmp_path, images):
    """AsyncRounds is a Method: a round copies what it changes (its versions, Deltas and counts), so a
    state taken mid-run is a snapshot, and the same round from it gives the same model."""
    spec = spec_of(algorithm="fedbuff", method="fedbuff", fedbuff_staleness="sqrt", n=2, seeds=1,
                   time_horizon=6.0, eval_every_time=3.0)
    trainer = _trainer(tmp_path, spec, images)
    for r in range(10):
        trainer.advance(r)
    saved = trainer.state
    kept = {"versions": dict(saved["versions"]), "deltas": dict(saved["deltas"]),
            "remaining": saved["remaining"].copy()}
    for r in range(10, 20):
        trainer.advance(r)
    assert saved["versions"] == kept["versions"] and saved["deltas"].keys() == kept["deltas"].keys()
    assert (saved["remaining"] == kept["remaining"]).all() and (trainer.state["remaining"] != kept["remaining"]).any()
    again, _ = trainer.method.round(saved, 10)
    first, _ = trainer.method.round(saved, 10)
    assert torch.equal(again["w"], first["w"])


def test_seed_workers_give_the_same_bytes(images, same_with_seed_workers):
    same_with_seed_workers(spec_of(seeds=3), images, workers=3)
