"""The real datasets, from the offline mirror: fetch (mirror mode) -> prepare -> load.

Skipped when the mirror is absent (see the real_mirror fixture in conftest.py).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedrepro.data import REGISTRY, fetch_dataset, load_prepared, prepare_dataset

MNIST_TRAIN = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
MNIST_TEST = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def _fetch_prepare_load(key, mirror, tmp_path):
    provenance = fetch_dataset(key, tmp_path / "raw", mirror, retries=0, timeout=5, backoff=0)
    assert {f["source"] for f in provenance["files"]} == {"mirror"}
    assert all(f["verified_by"] in ("canonical-md5", "mirror-manifest") for f in provenance["files"])
    out = prepare_dataset(key, tmp_path / "raw" / key, tmp_path / "prepared" / f"{key}.npz")
    return load_prepared(out)


def _assert_arrays(arrays, spec):
    assert {name: (a.shape, a.dtype) for name, a in arrays.items()} == spec


def test_every_registered_file_is_in_the_mirror_manifest(real_mirror):
    manifest = json.loads((real_mirror / "MANIFEST.json").read_text())
    for dataset in REGISTRY.values():
        for remote in dataset.files:
            assert remote.mirror_path in manifest, remote.mirror_path
            assert (real_mirror / remote.mirror_path).is_file()


def test_a9a(real_mirror, tmp_path):
    a = _fetch_prepare_load("a9a", real_mirror, tmp_path)
    u1, i1 = np.dtype(np.uint8), np.dtype(np.int8)
    _assert_arrays(
        a,
        {
            "X": ((32561, 123), u1),
            "y": ((32561,), i1),
            "X_test": ((16281, 123), u1),
            "y_test": ((16281,), i1),
        },
    )
    assert int((a["y"] == 1).sum()) == 7841 and int((a["y"] == -1).sum()) == 24720
    assert set(np.unique(a["X"])) == {0, 1}
    # First line of the file: -1 3:1 11:1 14:1 19:1 39:1 42:1 55:1 64:1 67:1 73:1 75:1 76:1 80:1 83:1
    assert a["y"][0] == -1
    assert (np.flatnonzero(a["X"][0]) + 1).tolist() == [3, 11, 14, 19, 39, 42, 55, 64, 67, 73, 75, 76, 80, 83]


def test_w8a(real_mirror, tmp_path):
    a = _fetch_prepare_load("w8a", real_mirror, tmp_path)
    _assert_arrays(a, {"X": ((49749, 300), np.dtype(np.uint8)), "y": ((49749,), np.dtype(np.int8))})
    assert int((a["y"] == 1).sum()) == 1479
    assert int((a["X"][:48000].sum(axis=1) == 0).sum()) == 4108  # all-zero rows (docs/papers/fedpage.md R2)


def test_insurance(real_mirror, tmp_path):
    a = _fetch_prepare_load("insurance", real_mirror, tmp_path)
    f8, i1 = np.dtype(np.float64), np.dtype(np.int8)
    _assert_arrays(
        a,
        {
            "age": ((1338,), f8),
            "sex": ((1338,), i1),
            "bmi": ((1338,), f8),
            "children": ((1338,), f8),
            "smoker": ((1338,), i1),
            "region": ((1338,), i1),
            "region_names": ((4,), np.dtype("<U9")),
            "charges": ((1338,), f8),
        },
    )
    assert a["region_names"].tolist() == ["northeast", "northwest", "southeast", "southwest"]
    first = [a[c][0] for c in ("age", "sex", "bmi", "children", "smoker")]
    assert first == [19.0, 0, 27.9, 0.0, 1]  # 19,female,27.9,0,yes,southwest,16884.924
    assert a["region_names"][a["region"][0]] == "southwest" and a["charges"][0] == 16884.924
    assert a["charges"].sum() == pytest.approx(17755824.9908, abs=1e-3)


@pytest.mark.parametrize(
    ("key", "train_counts", "test_counts"),
    [("mnist", MNIST_TRAIN, MNIST_TEST), ("fashion_mnist", [6000] * 10, [1000] * 10)],
)
def test_mnist_like(real_mirror, tmp_path, key, train_counts, test_counts):
    a = _fetch_prepare_load(key, real_mirror, tmp_path)
    u1, i8 = np.dtype(np.uint8), np.dtype(np.int64)
    _assert_arrays(
        a,
        {
            "x_train": ((60000, 28, 28), u1),
            "y_train": ((60000,), i8),
            "x_test": ((10000, 28, 28), u1),
            "y_test": ((10000,), i8),
        },
    )
    assert np.bincount(a["y_train"]).tolist() == train_counts
    assert np.bincount(a["y_test"]).tolist() == test_counts
    assert a["x_train"].max() == 255 and a["x_train"].min() == 0


@pytest.mark.slow  # 15-25 s: 190 MB to verify, extract, unpickle and recompress
def test_cifar10(real_mirror, tmp_path):
    a = _fetch_prepare_load("cifar10", real_mirror, tmp_path)
    u1, i8 = np.dtype(np.uint8), np.dtype(np.int64)
    _assert_arrays(
        a,
        {
            "x_train": ((50000, 32, 32, 3), u1),
            "y_train": ((50000,), i8),
            "x_test": ((10000, 32, 32, 3), u1),
            "y_test": ((10000,), i8),
        },
    )
    assert np.bincount(a["y_train"]).tolist() == [5000] * 10
    assert np.bincount(a["y_test"]).tolist() == [1000] * 10
    # Channels last and really R, G, B: the well-known per-channel means of the training
    # set (0.4914, 0.4822, 0.4465) * 255; a mixed-up layout gives ~120.7 everywhere.
    channel_means = a["x_train"].mean(axis=(0, 1, 2))
    np.testing.assert_allclose(channel_means, [125.3, 123.0, 113.9], atol=1.5)
