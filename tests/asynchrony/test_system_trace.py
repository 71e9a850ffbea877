"""System model constants and speed draws; Trace helpers the learning phase relies on."""

from __future__ import annotations

import numpy as np
import pytest

from fedrepro.asynchrony import PAPER_SYSTEMS, SystemModel, simulate
from fedrepro.errors import ConfigError


def test_paper_constants():
    fm, cf = SystemModel.from_config({"dataset": "fashion_mnist"}), SystemModel.from_config({"dataset": "cifar10"})
    assert fm.fastest_iteration_time == pytest.approx(1.7e-3) and cf.fastest_iteration_time == pytest.approx(3.14e-3)
    assert fm.upload_time == pytest.approx(0.044) and fm.download_time == pytest.approx(0.044)
    assert cf.upload_time == pytest.approx(0.0706)
    scaled = SystemModel.from_config({"dataset": "fashion_mnist", "compute_time_scale": 5})
    assert scaled.fastest_iteration_time == pytest.approx(8.5e-3) and scaled.upload_time == fm.upload_time
    assert SystemModel.from_config({"dataset": "cifar10", "model_bytes": 1e6}).upload_time == pytest.approx(0.02)
    assert set(PAPER_SYSTEMS) == {"fashion_mnist", "cifar10"}


@pytest.mark.parametrize("model,mean", [("literal", 5 * np.log(5) / 4), ("time_uniform", 3.0)])
def test_speed_models(model, mean):
    system = SystemModel.from_config({"dataset": "fashion_mnist", "speed_model": model})
    m = system.slowdowns(200_000, np.random.default_rng(0))
    assert m.min() >= 1.0 and m.max() <= 5.0 and m.mean() == pytest.approx(mean, rel=0.01)
    assert np.array_equal(m, system.slowdowns(200_000, np.random.default_rng(0)))


@pytest.mark.parametrize("config,match", [
    ({"dataset": "mnist"}, "no paper constants"),
    ({"dataset": "cifar10", "bandwidth": 1}, "unknown system keys"),
    ({"flops_per_iteration": 1e6}, "lacks"),
    ({"dataset": "cifar10", "speed_model": "gamma"}, "speed_model"),
    ({"dataset": "cifar10", "speed_range": [5, 1]}, "speed_range"),
    ({"dataset": "cifar10", "uplink_bps": 0}, "uplink_bps must be a positive"),
    ({"dataset": "cifar10", "model_bytes": -1}, "non-negative"),
    ({"dataset": "cifar10", "jitter": "exponential"}, "not implemented"),
])
def test_system_config_errors(config, match):
    with pytest.raises(ConfigError, match=match):
        SystemModel.from_config(config)


@pytest.fixture(scope="module")
def trace():
    return simulate("fedbuff", SystemModel.from_config({"dataset": "fashion_mnist"}), n_clients=30, n_per_round=5,
                    local_steps=20, rounds=200, rng_parts=("trace", 0))


def test_records_group_by_round(trace):
    bounds = trace.round_bounds
    assert bounds[0] == 0 and bounds[-1] == trace.client.size
    for t in (0, 57, 199):
        rows = trace.records_of_round(t)
        assert (rows.start, rows.stop) == (bounds[t], bounds[t + 1]) and np.all(trace.round[rows] == t)
        assert rows.stop - rows.start == 5


def test_version_bookkeeping_matches_brute_force(trace):
    refs = trace.version_refcounts()
    assert refs.sum() == trace.client.size and refs.size == trace.n_rounds + 1
    last = trace.version_last_use()
    for t in (0, 10, 100, 198):
        later = trace.round > t
        expected = np.unique(trace.start_version[later])
        assert np.array_equal(trace.versions_needed_after(t), expected[expected <= t + 1])
        v = int(trace.start_version[later][0])
        assert last[v] > t


def test_staleness_per_round_and_version_at(trace):
    mean, worst = trace.staleness_per_round()
    for t in (0, 50, 150):
        s = trace.staleness[trace.records_of_round(t)]
        assert mean[t] == pytest.approx(s.mean()) and worst[t] == s.max()
    b = trace.close_time
    assert trace.version_at(0.0) == 0 and trace.version_at(b[9]) == 10 and trace.version_at(b[9] - 1e-9) == 9
    assert np.all(np.diff(b) >= 0)


def test_summary_counts(trace):
    s = trace.summary()
    assert s["rounds"] == 200 and s["records"] == 1000
    assert s["consumed_fraction"] == pytest.approx(1000 / trace.trainings_started.sum())
    assert trace.trainings_started.sum() == 1000 + 30  # one training under way per client
