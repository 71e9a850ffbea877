"""System model constants and speed draws; the Trace bookkeeping the learning phase relies on."""

from __future__ import annotations

import numpy as np
import pytest

from asynchrony_helpers import PAPER_SYSTEMS, records_of_round, system_from_config
from fedrepro.asynchrony import PROTOCOLS, simulate
from fedrepro.errors import ConfigError


def test_paper_constants():
    fm, cf = system_from_config({"dataset": "fashion_mnist"}), system_from_config({"dataset": "cifar10"})
    assert fm.fastest_iteration_time == pytest.approx(1.7e-3) and cf.fastest_iteration_time == pytest.approx(3.14e-3)
    assert fm.upload_time == pytest.approx(0.044) and fm.download_time == pytest.approx(0.044)
    assert cf.upload_time == pytest.approx(0.0706)
    scaled = system_from_config({"dataset": "fashion_mnist", "compute_time_scale": 5})
    assert scaled.fastest_iteration_time == pytest.approx(8.5e-3) and scaled.upload_time == fm.upload_time
    assert system_from_config({"dataset": "cifar10", "model_bytes": 1e6}).upload_time == pytest.approx(0.02)
    assert set(PAPER_SYSTEMS) == {"fashion_mnist", "cifar10"}


@pytest.mark.parametrize("model,mean", [("literal", 5 * np.log(5) / 4), ("time_uniform", 3.0)])
def test_speed_models(model, mean):
    system = system_from_config({"dataset": "fashion_mnist", "speed_model": model})
    m = system.slowdowns(200_000, np.random.default_rng(0))
    assert m.min() >= 1.0 and m.max() <= 5.0 and m.mean() == pytest.approx(mean, rel=0.01)
    assert np.array_equal(m, system.slowdowns(200_000, np.random.default_rng(0)))


@pytest.mark.parametrize("config,match", [
    ({"dataset": "cifar10", "speed_model": "gamma"}, "speed_model"),
    ({"dataset": "cifar10", "speed_range": [5, 1]}, "speed_range"),
    ({"dataset": "cifar10", "uplink_bps": 0}, "uplink_bps must be a positive"),
    ({"dataset": "cifar10", "model_bytes": -1}, "non-negative"),
    ({"dataset": "cifar10", "jitter": "exponential"}, "not implemented"),
])
def test_system_config_errors(config, match):
    """SystemModel refuses a bad field (its own checks; the fixture builder only fills in the paper's constants)."""
    with pytest.raises(ConfigError, match=match):
        system_from_config(config)


@pytest.fixture(scope="module")
def trace():
    return simulate(PROTOCOLS["fedbuff"], system_from_config({"dataset": "fashion_mnist"}), n_clients=30, n_per_round=5,
                    local_steps=20, rounds=200, rng_parts=("trace", 0))


def test_records_group_by_round(trace):
    bounds = trace.round_bounds
    assert bounds[0] == 0 and bounds[-1] == trace.client.size
    for t in (0, 57, 199):
        rows = records_of_round(trace, t)
        assert (rows.start, rows.stop) == (bounds[t], bounds[t + 1]) and np.all(trace.round[rows] == t)
        assert rows.stop - rows.start == 5


def test_version_refcounts_and_close_times(trace):
    refs = trace.version_refcounts()
    assert refs.sum() == trace.client.size and refs.size == trace.n_rounds + 1
    assert np.all(np.diff(trace.close_time) >= 0)


def test_summary_counts(trace):
    s = trace.summary()
    assert s["rounds"] == 200 and s["records"] == 1000
    assert s["consumed_fraction"] == pytest.approx(1000 / trace.trainings_started.sum())
    assert trace.trainings_started.sum() == 1000 + 30  # one training under way per client
