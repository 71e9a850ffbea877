"""Protocol behaviour on hand-built cases: ties, weights, lazy records, streams, horizons, errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.stats import spearmanr

from asynchrony_helpers import idle, of_client, records_of_round, round_durations, system_from_config
from fedrepro.algorithms import method
from fedrepro.asynchrony import PROTOCOLS, SystemModel, simulate
from fedrepro.engines.asynchronous import timing_rng_parts
from fedrepro.errors import ConfigError

FMNIST = system_from_config({"dataset": "fashion_mnist"})
# one local step takes exactly 0.5 s on the fastest client, transfers take no time
UNIT = SystemModel(flops_per_iteration=1.0, fastest_flops=2.0, model_bytes=0.0)

COLUMNS = ("client", "training", "start_version", "n_steps", "round", "weight", "close_time", "trainings_started",
           "iteration_time")


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, c), getattr(b, c)) for c in COLUMNS)


def _run(protocol, system=FMNIST, N=20, n=4, K=5, **kw):
    kw.setdefault("rounds", 60)
    kw.setdefault("rng_parts", ("test", 0))
    return simulate(PROTOCOLS[protocol], system, n_clients=N, n_per_round=n,
                    local_steps=1 if protocol == "asysg" else K, **kw)


# --- determinism and streams --------------------------------------------------------------------


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_deterministic_and_seed_sensitive(protocol):
    a, b = _run(protocol), _run(protocol)
    assert _same(a, b)
    assert not _same(a, _run(protocol, rng_parts=("test", 1)))


def test_stream_key_ignores_learning_keys_and_speeds_are_shared_by_algorithms():
    spec = {"paper": "defedavg", "dataset": "fashion_mnist", "n_clients": 20, "algorithm": "fedbuff", "lr": 0.1,
            "local_lr": 0.01, "model": "mlp", "setting": "niid", "n_per_round": 4, "seeds": 3}
    changed = {**spec, "algorithm": "defedavg_niid", "lr": 1.0, "local_lr": 0.05, "model": "cnn_defedavg",
               "setting": "iid", "seeds": 5}
    parts = timing_rng_parts(spec, 0)
    assert parts == timing_rng_parts(changed, 0)
    assert parts != timing_rng_parts(spec, 1)
    assert parts != timing_rng_parts({**spec, "dataset": "cifar10"}, 0)
    assert parts != timing_rng_parts({**spec, "n_clients": 100}, 0)
    assert _same(_run("fedbuff", rng_parts=parts), _run("fedbuff", rng_parts=timing_rng_parts(changed, 0)))
    # common random numbers: every protocol of a seed sees the same client speeds
    speeds = {p: _run(p, rng_parts=parts).iteration_time for p in PROTOCOLS}
    assert all(np.array_equal(s, speeds["fedavg"]) for s in speeds.values())


# --- synchronous FedAvg -------------------------------------------------------------------------


def test_fedavg_equal_speeds_no_communication_round_time_is_k_steps():
    tr = _run("fedavg", UNIT, N=6, n=3, K=4, slowdowns=np.ones(6), rounds=25)
    assert np.array_equal(tr.close_time, 2.0 * np.arange(1, 26))  # K * T_iter = 4 * 0.5 s
    assert np.array_equal(tr.start_version, tr.round) and np.all(tr.n_steps == 4)
    assert np.allclose(np.bincount(tr.round, weights=tr.weight), 1.0)


def test_fedavg_duplicates_train_once_with_multiplicity_weight():
    tr = _run("fedavg", N=3, n=6, rounds=40)
    for t in range(tr.n_rounds):
        rows = records_of_round(tr, t)
        clients = tr.client[rows]
        assert np.unique(clients).size == clients.size  # one training per distinct client
        assert np.allclose(tr.weight[rows] * 6, np.round(tr.weight[rows] * 6))
        assert tr.weight[rows].sum() == pytest.approx(1.0)
    assert np.any(tr.weight > 1 / 6 + 1e-12), "with n = 2N some client must be drawn twice"
    indep = _run("fedavg", N=3, n=6, rounds=40, fedavg_duplicates="independent")
    assert np.all(indep.weight == 1 / 6) and np.all(np.bincount(indep.round) == 6)


def test_fedavg_round_time_is_the_slowest_distinct_client():
    tr = _run("fedavg", rounds=30)
    T, up, down = 5 * tr.iteration_time, FMNIST.upload_time, FMNIST.download_time
    expected = [down + T[tr.client[records_of_round(tr, t)]].max() + up for t in range(30)]
    np.testing.assert_allclose(round_durations(tr), expected, rtol=1e-12)


# --- first arrivals: DeFedAvg-IID, FedBuff, AsySG ---------------------------------------------------------


def test_defedavg_iid_equal_speeds_all_clients_fresh_every_round():
    """n = N, equal speeds, no communication: every round takes one staleness-0 training per client,
    so DeFedAvg-IID is synchronous FedAvg (the precondition of the engine-level equality test)."""
    N = 5
    tr = _run("defedavg_iid", UNIT, N=N, n=N, K=3, slowdowns=np.ones(N), rounds=20)
    for t in range(20):
        rows = records_of_round(tr, t)
        assert np.array_equal(tr.client[rows], np.arange(N))
        assert np.all(tr.training[rows] == t) and np.all(tr.start_version[rows] == t)
    assert np.all(tr.weight == 1 / N)
    assert np.array_equal(tr.close_time, 1.5 * np.arange(1, 21))


def test_ties_go_to_the_lower_client_id():
    """Equal speeds: all four arrive together; client id orders them into rounds of n = 2."""
    tr = _run("defedavg_iid", UNIT, N=4, n=2, K=2, slowdowns=np.ones(4), rounds=4)
    assert tr.client.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    assert tr.round.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert tr.close_time.tolist() == [1.0, 1.0, 2.0, 2.0]
    # both rounds closing at t = 1 are broadcast before anyone restarts: the restarts use w^2
    assert tr.start_version.tolist() == [0, 0, 0, 0, 2, 2, 2, 2]


def test_fedbuff_staleness_weights_hand_checked():
    """N = 2, n = 2, K = 1, T_iter = 1 s and 3 s, no communication.
    Arrivals: c0 at 1, 2, 3, 4, 5, 6, ...; c1 at 3, 6, ... Round 0 = {c0@1 (v0), c0@2 (v0)} closes at 2;
    round 1 = {c0@3 (started 2, v1), c1@3 (started 0, v0)} closes at 3; round 2 = {c0@4 (v2), c0@5 (v2)}
    closes at 5; round 3 = {c0@6 (started 5, v3), c1@6 (started 3, v2)}."""
    system = dataclasses.replace(UNIT, fastest_flops=1.0)
    tr = simulate(PROTOCOLS["fedbuff"], system, n_clients=2, n_per_round=2, local_steps=1, rounds=4,
                  slowdowns=np.array([1.0, 3.0]))
    assert tr.close_time.tolist() == [2.0, 3.0, 5.0, 6.0]
    assert tr.client.tolist() == [0, 0, 0, 1, 0, 0, 0, 1]
    assert tr.start_version.tolist() == [0, 0, 1, 0, 2, 2, 3, 2]
    s = 1 / np.sqrt(2)
    np.testing.assert_allclose(tr.weight, np.array([1, 1, 1, s, 1, 1, 1, s]) / 2)
    plain = simulate(PROTOCOLS["fedbuff"], system, n_clients=2, n_per_round=2, local_steps=1, rounds=4,
                     slowdowns=np.array([1.0, 3.0]), fedbuff_staleness="none")
    assert np.all(plain.weight == 0.5) and np.array_equal(plain.start_version, tr.start_version)


def test_asysg_is_first_arrivals_with_one_step():
    a = _run("asysg", K=1)
    b = _run("defedavg_iid", K=1)
    assert _same(a, b) and np.all(a.n_steps == 1)
    with pytest.raises(ConfigError, match="exactly 1 local step"):
        simulate(PROTOCOLS["asysg"], FMNIST, n_clients=4, n_per_round=2, local_steps=5, rounds=3)


def test_fedbuff_favours_fast_clients_niid_does_not():
    """Claim C8's mechanism (paper §4.2.1, FedBuff "relies on fast clients"): first-n participation follows
    speed, uniform sampling does not."""
    kw = dict(N=100, n=10, K=50, rounds=3000, rng_parts=("spearman", 0))
    buff, niid = _run("fedbuff", **kw), _run("defedavg_niid", **kw)
    speed = 1 / buff.iteration_time
    assert spearmanr(buff.participation(), speed).statistic > 0.5
    assert abs(spearmanr(niid.participation(), speed).statistic) < 0.2


# --- DeFedAvg-nIID ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["continuous", "energy_limited"])
def test_niid_records_are_unique_trainings_with_multiplicity_weights(mode):
    tr = _run("defedavg_niid", N=10, n=5, rounds=300, niid_send_buffer=mode)
    keys = tr.client * 10**6 + tr.training
    assert np.unique(keys).size == keys.size, "a consumed training was sent twice"
    assert np.allclose(np.bincount(tr.round, weights=tr.weight), 1.0)
    gaps = np.concatenate([np.diff(np.sort(tr.training[tr.client == i])) for i in range(10)])
    unconsumed = tr.trainings_started - tr.participation()
    if mode == "continuous":
        assert gaps.max() > 1 and unconsumed.sum() > tr.client.size, "overwritten trainings must be absent"
    else:  # nothing is overwritten: at most the running one and one cut off by the end are not consumed
        assert gaps.max() == 1 and np.all((unconsumed >= 1) & (unconsumed <= 2))


def test_niid_staleness_is_small_and_waits_show_in_round_times():
    tr = _run("defedavg_niid", N=100, n=10, K=50, rounds=500)
    assert tr.staleness.max() <= 12  # continuous mode: about two trainings' worth of rounds
    assert np.all(round_durations(tr) >= FMNIST.upload_time - 1e-12)


def test_niid_overlapping_uploads_make_rounds_no_slower():
    paused = _run("defedavg_niid", rounds=200)
    overlap = _run("defedavg_niid", rounds=200, niid_upload_pauses_training=False)
    assert not np.array_equal(paused.close_time, overlap.close_time)
    assert overlap.close_time[-1] <= paused.close_time[-1]


@pytest.mark.parametrize("protocol,options", [
    ("fedavg", {}), ("defedavg_iid", {}), ("defedavg_niid", {}), ("defedavg_niid", {"niid_send_buffer": "energy_limited"}),
    ("favano", {}),
])
def test_timeline_a_client_does_one_thing_at_a_time(protocol, options):
    tr = _run(protocol, N=6, n=3, rounds=40, record_timeline=True, **options)
    tl = tr.timeline
    for i in range(6):
        spans = of_client(tl, i)
        starts, ends = np.array([s for _, s, _, _ in spans]), np.array([e for _, _, e, _ in spans])
        assert np.all(starts[1:] >= ends[:-1] - 1e-12), (protocol, spans[:6])
        busy = sum(e - s for _, s, e, _ in spans) + sum(b - a for a, b in idle(tl, i, tr.end_time))
        assert busy == pytest.approx(tr.end_time)
        if protocol in ("defedavg_iid", "defedavg_niid") and not options:  # these clients never wait
            # the interval under way at the end is not recorded: ignore the last gap
            waits = [(a, b) for a, b in idle(tl, i, tr.end_time) if b - a > 1e-12 and b < tr.end_time]
            assert waits == [(0.0, pytest.approx(FMNIST.download_time))], waits
    # every consumed training was trained (for K steps, except FAVANO's interrupted ones) before its round closed
    trained = {}
    for c, k, s, e, j in zip(tl.client, tl.kind, tl.start, tl.end, tl.training):
        if k == 0:
            trained[(int(c), int(j))] = trained.get((int(c), int(j)), 0.0) + (e - s)
    for c, j, q, t in zip(tr.client, tr.training, tr.n_steps, tr.round):
        if q:
            assert trained[(int(c), int(j))] >= q * tr.iteration_time[c] - 1e-9


# --- FAVANO ---------------------------------------------------------------------------------------


def test_favano_period_steps_and_weights():
    tr = _run("favano", N=10, n=4, K=50, rounds=50, favano_period_wait_s=0.05)
    up, down = FMNIST.upload_time, FMNIST.download_time
    np.testing.assert_allclose(tr.close_time, down + np.arange(50) * (up + down + 0.05) + up)
    assert np.all((tr.n_steps >= 0) & (tr.n_steps <= 50)) and np.all(tr.n_steps[tr.round == 0] == 0)
    assert np.all(np.bincount(tr.round) == 4) and np.all(tr.weight == 0.25)
    rw = _run("favano", N=10, n=4, K=50, rounds=50, favano_period_wait_s=0.05, favano_reweight="k_over_q")
    q = rw.n_steps
    np.testing.assert_allclose(rw.weight, np.where(q > 0, 50 / np.maximum(q, 1), 0) / 4)


def test_favano_rejects_a_clock_that_cannot_advance():
    with pytest.raises(ConfigError, match="never advances"):
        simulate(PROTOCOLS["favano"], UNIT, n_clients=4, n_per_round=2, local_steps=2, horizon_time=10.0)


# --- horizons -------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_time_horizon_keeps_exactly_the_rounds_closed_by_it(protocol):
    H = 3.0
    by_time = _run(protocol, rounds=None, horizon_time=H)
    assert by_time.n_rounds > 0 and by_time.close_time[-1] <= H and by_time.end_time == H
    by_rounds = _run(protocol, rounds=by_time.n_rounds + 1)
    assert by_rounds.close_time[-1] > H
    cut = by_rounds.round < by_time.n_rounds
    for col in ("client", "training", "start_version", "n_steps", "round", "weight"):
        assert np.array_equal(getattr(by_rounds, col)[cut], getattr(by_time, col))


# --- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,match", [
    (dict(protocol="fedsgd"), "protocol must be a Protocol"),  # a name, not the record
    (dict(protocol="fedbuff", fedbuff_staleness="linear"), "fedbuff_staleness='linear' is not allowed"),
    (dict(protocol="fedbuff", favano_reweight="none"), "has no option"),
    (dict(protocol="defedavg_niid", niid_upload_pauses_training="yes"), "not allowed"),
    (dict(protocol="favano", favano_period_wait_s=-1), "seconds >= 0"),
    (dict(protocol="favano", n_per_round=30), "need n <= N"),
    (dict(protocol="fedavg", rounds=None), "horizon_time"),
    (dict(protocol="fedavg", n_per_round=0), "n_per_round must be a positive integer"),
    (dict(protocol="fedavg", slowdowns=np.zeros(20)), "slowdowns must be 20 positive"),
])
def test_bad_input_is_a_config_error(kwargs, match):
    args = dict(protocol="fedavg", n_clients=20, n_per_round=4, local_steps=5, rounds=10)
    args.update(kwargs)
    name = args.pop("protocol")
    with pytest.raises(ConfigError, match=match):
        simulate(PROTOCOLS.get(name, name), FMNIST, **args)


def test_an_unknown_algorithm_is_a_config_error_naming_the_known_ones():
    """A run names its protocol through its algorithm, whose record holds it."""
    with pytest.raises(ConfigError, match=r"unknown method 'fedsgd' of engine async; expected one of .*fedbuff"):
        method("async", "fedsgd")
    assert all(method("async", name).protocol is PROTOCOLS[name] for name in PROTOCOLS)
