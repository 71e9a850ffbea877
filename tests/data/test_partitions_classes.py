"""DeFedAvg partitions (docs/papers/defedavg.md R9): IID equal split, k distinct classes per client with exact
balance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedrepro.data.partitions import class_group_partition, class_groups, iid_partition
from partitions_helpers import partition_summary

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def group_setups(draw):
    """(N, C, k) with N * k divisible by C and k <= C."""
    C = draw(st.integers(2, 12))
    k = draw(st.integers(1, min(C, 4)))
    unit = C // np.gcd(C, k)  # N must be a multiple of this
    N = unit * draw(st.integers(1, max(1, 60 // unit)))
    return N, C, k, draw(st.integers(0, 2**32 - 1))


@PROPS
@given(group_setups())
def test_class_groups_distinct_and_exactly_balanced(setup):
    N, C, k, seed = setup
    groups = class_groups(N, C, np.random.default_rng(seed), k)
    assert groups.shape == (N, k) and groups.dtype == np.int64
    srt = np.sort(groups, axis=1)
    assert not np.any(srt[:, 1:] == srt[:, :-1]), "a client holds a class twice"
    assert np.array_equal(np.bincount(groups.ravel(), minlength=C), np.full(C, N * k // C))
    assert np.array_equal(groups, class_groups(N, C, np.random.default_rng(seed), k))


@pytest.mark.parametrize("N,per_class", [(100, 20), (20, 4)])
def test_two_classes_per_client_paper_and_reduced_scale(N, per_class):
    labels = np.random.default_rng(1).permutation(np.repeat(np.arange(10), 6000 if N == 100 else 1200))
    idx, classes = class_group_partition(labels, n_clients=N, rng=np.random.default_rng(7), return_classes=True)
    assert idx.shape == (N, 600)
    assert np.unique(idx).size == idx.size, "clients share samples"
    counts = partition_summary(idx, labels, n_classes=10)["device_class_counts"]
    assert np.array_equal((counts > 0).sum(axis=1), np.full(N, 2)), "a client does not hold exactly 2 classes"
    assert np.array_equal(np.sort(counts, axis=1)[:, -2:], np.full((N, 2), 300)), "unequal shares of a client's classes"
    assert np.array_equal((counts > 0).sum(axis=0), np.full(10, per_class))
    assert np.array_equal(np.sort(classes, axis=1), np.sort(np.argsort(-counts, axis=1, kind="stable")[:, :2], axis=1))
    again = class_group_partition(labels, n_clients=N, rng=np.random.default_rng(7))
    assert np.array_equal(idx, again)
    assert not np.array_equal(idx, class_group_partition(labels, n_clients=N, rng=np.random.default_rng(8)))


def test_class_group_partition_uses_the_scarcest_class_and_an_explicit_size():
    labels = np.repeat(np.arange(4), [50, 40, 60, 45])  # 8 clients x 2 classes: 4 clients per class
    idx = class_group_partition(labels, n_clients=8, n_classes=4, rng=np.random.default_rng(0))
    assert idx.shape == (8, 20)  # 40 // 4 = 10 per class share
    small = class_group_partition(labels, n_clients=8, n_classes=4, rng=np.random.default_rng(0), samples_per_client=6)
    assert small.shape == (8, 6) and np.unique(small).size == 48


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(n_clients=7), "not divisible by n_classes=10"),
        (dict(n_clients=10, classes_per_client=11), "exceeds n_classes"),
        (dict(n_clients=10, samples_per_client=7), "divisible by classes_per_client"),
        (dict(n_clients=10, samples_per_client=400), "at most"),
        (dict(n_clients=0), "at least 1"),
    ],
)
def test_class_group_partition_rejects_impossible_settings(kwargs, match):
    labels = np.repeat(np.arange(10), 100)
    with pytest.raises(ValueError, match=match):
        class_group_partition(labels, rng=np.random.default_rng(0), **kwargs)


@PROPS
@given(st.integers(1, 500), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_iid_partition_is_an_equal_disjoint_random_split(n_samples, n_clients, seed):
    if n_samples < n_clients:
        with pytest.raises(ValueError, match="distinct samples"):
            iid_partition(n_samples, n_clients=n_clients, rng=np.random.default_rng(seed))
        return
    idx = iid_partition(n_samples, n_clients=n_clients, rng=np.random.default_rng(seed))
    assert idx.shape == (n_clients, n_samples // n_clients) and idx.dtype == np.int64
    assert np.unique(idx).size == idx.size and idx.min() >= 0 and idx.max() < n_samples
    assert np.array_equal(idx, iid_partition(n_samples, n_clients=n_clients, rng=np.random.default_rng(seed)))


def test_iid_partition_clients_see_all_classes():
    labels = np.repeat(np.arange(10), 6000)
    idx = iid_partition(labels.size, n_clients=100, rng=np.random.default_rng(3))
    counts = partition_summary(idx, labels, n_classes=10)["device_class_counts"]
    assert counts.min() > 20  # 60 expected per class; a sorted or per-class split would give zeros
