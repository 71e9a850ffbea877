"""FedCluster partitions: property tests on synthetic labels, concrete checks on real MNIST labels."""

from __future__ import annotations

import gzip
import itertools
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedrepro.data.partitions import (
    _distinct_positions,
    device_partition,
    random_clusters,
    rho_cluster_clusters,
    rho_cluster_matrix,
    round_half_up,
)
from fedrepro.utils import atomic
from partitions_helpers import cluster_major_counts, cluster_partition, partition_summary

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- strategies ----------------------------------------------------------------------------


@st.composite
def device_setups(draw):
    """Synthetic labels plus arguments for which device_partition must succeed."""
    C = draw(st.integers(2, 6))
    G = draw(st.integers(1, 8))  # devices per major class
    m = draw(st.integers(1, 40))  # samples per device
    if draw(st.booleans()):
        rho = draw(st.integers(0, m)) / m  # rho * m integral: the fraction is exact
    else:
        rho = draw(st.floats(0.0, 1.0, allow_nan=False))
    # every class has at least m images (the most a device can need), sometimes barely
    # (exercises the dense branch of the without-replacement sampler)
    pools = draw(st.lists(st.integers(m, m + 3 * m), min_size=C, max_size=C))
    seed = draw(st.integers(0, 2**32 - 1))
    perm = np.random.default_rng(seed ^ 0x5EED).permutation(sum(pools))
    labels = np.repeat(np.arange(C), pools)[perm].astype(np.int64)
    remainder = draw(st.sampled_from(["balanced", "random"]))
    return dict(labels=labels, C=C, G=G, m=m, rho=rho, seed=seed, remainder=remainder)


def _partition(s, **kw):
    return device_partition(
        s["labels"],
        n_devices=s["C"] * s["G"],
        samples_per_device=s["m"],
        rho_device=s["rho"],
        n_classes=s["C"],
        rng=np.random.default_rng(s["seed"]),
        remainder=s["remainder"],
        **kw,
    )


# --- device level: properties ---------------------------------------------------------------


@PROPS
@given(device_setups())
def test_device_partition_shape_range_and_no_repeat_within_a_device(s):
    idx, majors = _partition(s, return_majors=True)
    n = s["C"] * s["G"]
    assert idx.shape == (n, s["m"]) and idx.dtype == np.int64
    assert idx.min() >= 0 and idx.max() < s["labels"].size
    srt = np.sort(idx, axis=1)
    assert not np.any(srt[:, 1:] == srt[:, :-1]), "an image repeats inside a device"
    assert majors.shape == (n,) and np.array_equal(np.bincount(majors, minlength=s["C"]), [s["G"]] * s["C"])


@PROPS
@given(device_setups())
def test_major_fraction_is_rho_rounded_half_up_and_minors_share_the_rest(s):
    idx, majors = _partition(s, return_majors=True)
    C, m, rho = s["C"], s["m"], s["rho"]
    summary = partition_summary(idx, s["labels"], n_classes=C, majors=majors)
    counts = summary["device_class_counts"]
    assert np.all(counts.sum(axis=1) == m)

    n_major = round_half_up(rho * m)
    assert abs(n_major - rho * m) <= 0.5 + 1e-9  # within rounding
    if float(rho * m).is_integer():
        assert np.all(summary["device_major_fraction"] == rho)  # exact when rho * m is integral
    rows = np.arange(len(majors))
    assert np.all(counts[rows, majors] == n_major)
    assert np.all(np.abs(summary["device_major_fraction"] - rho) <= 1 / (2 * m) + 1e-9)

    # the rest: (1 - rho)/(C - 1) per minor class, largest remainder (base or base + 1,
    # exactly `extra` minors get the + 1)
    base, extra = divmod(m - n_major, C - 1)
    minors = counts.copy()
    minors[rows, majors] = -1
    minor_counts = minors[minors >= 0].reshape(len(majors), C - 1)
    assert np.all((minor_counts == base) | (minor_counts == base + 1))
    assert np.all((minor_counts == base + 1).sum(axis=1) == extra)


@PROPS
@given(device_setups())
def test_class_totals_balance(s):
    """Paper IV-A's counts: every class totals n*m/C draws for every rho (exact with the balanced design,
    docs/papers/fedcluster.md R4)."""
    idx, majors = _partition(s, return_majors=True)
    C, G, m = s["C"], s["G"], s["m"]
    totals = partition_summary(idx, s["labels"], n_classes=C)["class_totals"]
    assert totals.sum() == C * G * m
    if s["remainder"] == "balanced":
        assert np.all(totals == G * m)
    else:  # independent per-device +1s: balanced only in expectation, within these bounds
        n_major = round_half_up(s["rho"] * m)
        base = (m - n_major) // (C - 1)
        lo = G * n_major + (C - 1) * G * base
        assert np.all((totals >= lo) & (totals <= lo + (C - 1) * G))


@PROPS
@given(device_setups())
def test_device_partition_is_deterministic_given_the_seed(s):
    a, ma = _partition(s, return_majors=True)
    b, mb = _partition(s, return_majors=True)
    assert np.array_equal(a, b) and np.array_equal(ma, mb)
    assert np.array_equal(_partition(s), a)  # return_majors does not change the draws


# --- clusters: properties -------------------------------------------------------------------


@PROPS
@given(st.integers(1, 12), st.integers(1, 30), st.integers(0, 2**32 - 1))
def test_random_clusters_are_an_equal_size_partition(M, size, seed):
    n = M * size
    cl = random_clusters(n, M, np.random.default_rng(seed))
    assert cl.shape == (M, size) and cl.dtype == np.int64
    assert np.array_equal(np.sort(cl.ravel()), np.arange(n))  # each device in exactly one cluster
    assert np.array_equal(cl, random_clusters(n, M, np.random.default_rng(seed)))


@st.composite
def cluster_setups(draw):
    C = draw(st.integers(2, 6))
    G = draw(st.integers(1, 10))  # devices per major class = devices per cluster
    rho_c = draw(st.one_of(st.floats(0.0, 1.0, allow_nan=False), st.integers(0, G).map(lambda j: j / G)))
    seed = draw(st.integers(0, 2**32 - 1))
    return C, G, rho_c, seed


@PROPS
@given(cluster_setups())
def test_rho_cluster_composition(setup):
    """Paper IV-E (docs/papers/fedcluster.md R19): cluster m holds round(rho_c * S) devices of major class m, the
    rest spread evenly."""
    C, G, rho_c, seed = setup
    rng = np.random.default_rng(seed)
    majors = np.repeat(np.arange(C), G)
    rng.shuffle(majors)
    cl = rho_cluster_clusters(majors, C, rho_c, rng)
    assert cl.shape == (C, G)
    assert np.array_equal(np.sort(cl.ravel()), np.arange(C * G))  # a partition of the devices
    comp = cluster_major_counts(cl, majors, C)
    assert np.all(comp.sum(axis=0) == G) and np.all(comp.sum(axis=1) == G)
    d = round_half_up(rho_c * G)
    assert np.all(np.diag(comp) == d)
    assert abs(d / G - rho_c) <= 1 / (2 * G) + 1e-9
    base, extra = divmod(G - d, C - 1)
    off = comp[~np.eye(C, dtype=bool)].reshape(C, C - 1)
    assert np.all((off == base) | (off == base + 1))
    assert np.all((off == base + 1).sum(axis=1) == extra)


@PROPS
@given(st.integers(2, 10), st.integers(1, 50), st.integers(0, 2**32 - 1))
def test_rho_cluster_matrix_is_monotone_in_rho_cluster(M, S, seed):
    grid = np.linspace(0, 1, 21)
    diag = [rho_cluster_matrix(M * S, M, r, np.random.default_rng(seed))[0, 0] for r in grid]
    assert np.all(np.diff(diag) >= 0) and diag[0] <= S // M + 1 and diag[-1] == S
    offmax = [rho_cluster_matrix(M * S, M, r, np.random.default_rng(seed))[0, 1:].max() for r in grid]
    assert np.all(np.diff(offmax) <= 0)


@PROPS
@given(device_setups(), st.floats(0.0, 1.0, allow_nan=False))
def test_cluster_partition_same_devices_as_device_partition_and_bounded_composition(s, rho_c):
    C, G, m = s["C"], s["G"], s["m"]
    idx, cl = cluster_partition(
        s["labels"],
        n_devices=C * G,
        samples_per_device=m,
        n_clusters=C,
        rho_cluster=rho_c,
        rho_device=s["rho"],
        n_classes=C,
        rng=np.random.default_rng(s["seed"]),
        remainder=s["remainder"],
    )
    ref, majors = _partition(s, return_majors=True)
    assert np.array_equal(idx, ref)  # FedAvg at the same seed sees the same device data
    assert np.array_equal(np.sort(cl.ravel()), np.arange(C * G))
    summ = partition_summary(idx, s["labels"], cl, n_classes=C, majors=majors)
    assert np.all(summ["cluster_sizes"] == G)
    assert summ["cluster_tv_mean"] <= summ["device_tv_mean"] + 1e-12  # H_cluster <= H_device analogue
    # cluster m's samples of class m: d devices bring n_major each, the others base or base + 1
    d = round_half_up(rho_c * G)
    n_major = round_half_up(s["rho"] * m)
    base = (m - n_major) // (C - 1)
    own = np.diag(summ["cluster_class_counts"])
    lo = d * n_major + (G - d) * base
    assert np.all((own >= lo) & (own <= lo + (G - d)))


# --- sampler -------------------------------------------------------------------------------


@pytest.mark.parametrize("pool,k", [(6, 3), (5, 3), (7, 1), (4, 4)])
def test_distinct_positions_are_uniform_subsets(pool, k):
    rows = 60_000
    pos = _distinct_positions(np.random.default_rng(1), pool, rows, k)
    srt = np.sort(pos, axis=1)
    assert np.all(srt[:, 1:] != srt[:, :-1]) and pos.min() >= 0 and pos.max() < pool
    code = (srt * pool ** np.arange(k)).sum(axis=1)
    _, freq = np.unique(code, return_counts=True)
    n_subsets = len(list(itertools.combinations(range(pool), k)))
    assert freq.size == n_subsets
    expected = rows / n_subsets
    chi2 = ((freq - expected) ** 2 / expected).sum()
    assert chi2 < n_subsets + 6 * np.sqrt(2 * n_subsets) + 10  # far tail of chi2(n_subsets - 1)


# --- concrete and error cases -------------------------------------------------------------


def test_different_seeds_give_different_partitions():
    labels = np.repeat(np.arange(10), 100)
    a = device_partition(labels, n_devices=20, samples_per_device=20, rho_device=0.5, rng=np.random.default_rng(0))
    b = device_partition(labels, n_devices=20, samples_per_device=20, rho_device=0.5, rng=np.random.default_rng(1))
    assert not np.array_equal(a, b)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(rho_device=1.2), r"rho_device must lie in \[0, 1\]"),
        (dict(rho_device=-0.1), r"rho_device must lie in \[0, 1\]"),
        (dict(rho_device=float("nan")), r"rho_device must lie in \[0, 1\]"),
        (dict(rho_device=0.5, n_devices=25), r"not divisible by n_classes"),
        (dict(rho_device=1.0, samples_per_device=60), r"class \d has only 50 images but a device needs 60"),
        (dict(rho_device=0.5, remainder="nope"), r"remainder must be one of"),
        (dict(rho_device=0.5, n_classes=5), r"labels must lie in \[0, 5\)"),
        (dict(rho_device=0.5, samples_per_device=0), r"samples_per_device must be at least 1"),
    ],
)
def test_device_partition_rejects_impossible_settings(kwargs, match):
    labels = np.repeat(np.arange(10), 50)
    args = dict(n_devices=20, samples_per_device=10, rng=np.random.default_rng(0)) | kwargs
    with pytest.raises(ValueError, match=match):
        device_partition(labels, **args)


def test_cluster_errors():
    labels = np.repeat(np.arange(10), 50)
    with pytest.raises(ValueError, match="not divisible by n_clusters"):
        random_clusters(10, 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_clusters == n_classes"):
        cluster_partition(labels, n_devices=20, samples_per_device=10, n_clusters=5, rho_cluster=0.5,
                          rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"rho_cluster must lie in \[0, 1\]"):
        cluster_partition(labels, n_devices=20, samples_per_device=10, rho_cluster=2.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_clusters == n_classes"):
        rho_cluster_clusters(np.array([0, 0, 0, 1]), 2, 0.5, np.random.default_rng(0))
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        random_clusters(10, 2, 0)


def test_a_partition_round_trips_through_an_atomic_npz(tmp_path):
    labels = np.repeat(np.arange(10), 60)
    idx, cl = cluster_partition(labels, n_devices=20, samples_per_device=30, rho_cluster=0.5, rng=np.random.default_rng(3))
    target = tmp_path / "sub" / "partition.npz"
    atomic.write_npz(target, {"indices": idx, "clusters": cl, "rho": np.float64(0.5)})
    assert [p.name for p in target.parent.iterdir()] == ["partition.npz"]  # no temp files left
    with np.load(target, allow_pickle=False) as npz:
        back = {name: npz[name] for name in npz.files}
    assert set(back) == {"indices", "clusters", "rho"}
    assert np.array_equal(back["indices"], idx) and back["indices"].dtype == np.int64
    assert np.array_equal(back["clusters"], cl) and float(back["rho"]) == 0.5


# --- real MNIST labels ----------------------------------------------------------------------

# Per-device counts (major; sorted minor counts) at 500 samples: paper IV-A's shares with largest-remainder
# rounding (docs/papers/fedcluster.md R4).
COUNT_TABLE = {
    0.1: (50, [50] * 9),
    0.4: (200, [34] * 3 + [33] * 6),
    0.5: (250, [28] * 7 + [27] * 2),
    0.7: (350, [17] * 6 + [16] * 3),
    0.9: (450, [6] * 5 + [5] * 4),
}


@pytest.fixture(scope="module")
def mnist_labels(real_mirror: Path) -> np.ndarray:
    path = real_mirror / "mnist" / "train-labels-idx1-ubyte.gz"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    raw = gzip.decompress(path.read_bytes())
    assert int.from_bytes(raw[:4], "big") == 0x0801
    return np.frombuffer(raw, dtype=np.uint8, offset=8).astype(np.int64)


@pytest.mark.parametrize("rho", sorted(COUNT_TABLE))
def test_mnist_paper_scale_matches_the_count_table(mnist_labels, rho):
    t0 = time.perf_counter()
    idx, majors = device_partition(mnist_labels, rho_device=rho, rng=np.random.default_rng(2020), return_majors=True)
    elapsed = time.perf_counter() - t0
    assert elapsed < 1.0, f"1000 x 500 partition took {elapsed:.2f} s"
    assert idx.shape == (1000, 500)
    s = partition_summary(idx, mnist_labels, majors=majors)
    assert np.array_equal(np.bincount(majors), [100] * 10)
    assert np.all(s["class_totals"] == 50_000)  # paper IV-A: 50,000 draws per class for every rho
    major, minors = COUNT_TABLE[rho]
    counts = s["device_class_counts"]
    rows = np.arange(1000)
    assert np.all(counts[rows, majors] == major)
    other = np.sort(counts[np.arange(10)[None, :] != majors[:, None]].reshape(1000, 9), axis=1)[:, ::-1]
    assert np.all(other == minors)
    # images repeat across devices (about 8.3x on average), never within one
    assert s["unique_images"] <= 60_000 and s["max_reuse"] > 1
    assert abs(s["image_multiplicity"].sum() / s["unique_images"] - 500_000 / 60_000) < 0.1


def test_mnist_rho_cluster_counts_and_monotone_heterogeneity(mnist_labels):
    spec_off = {0.1: [10] * 9, 0.5: [6] * 5 + [5] * 4, 0.9: [2] + [1] * 8}
    own_fraction, tv = [], []
    for rho_c in (0.1, 0.5, 0.9):
        idx, cl = cluster_partition(mnist_labels, rho_cluster=rho_c, rng=np.random.default_rng(7))
        ref, majors = device_partition(mnist_labels, rho_device=0.5, rng=np.random.default_rng(7), return_majors=True)
        assert np.array_equal(idx, ref)
        s = partition_summary(idx, mnist_labels, cl, majors=majors)
        comp = s["cluster_major_device_counts"]
        assert np.all(np.diag(comp) == round(100 * rho_c))
        off = np.sort(comp[~np.eye(10, dtype=bool)].reshape(10, 9), axis=1)[:, ::-1]
        assert np.all(off == spec_off[rho_c])
        own_fraction.append(np.diag(s["cluster_class_fractions"]).mean())
        tv.append(s["cluster_tv_mean"])
        assert s["cluster_tv_mean"] <= s["device_tv_mean"]
    # a larger rho_cluster: each cluster leans more to its own class (higher H_cluster)
    assert own_fraction[0] < own_fraction[1] < own_fraction[2]
    assert tv[0] < tv[1] < tv[2]
    assert abs(own_fraction[0] - 0.1) < 1e-3  # rho_cluster = 0.1: balanced clusters
