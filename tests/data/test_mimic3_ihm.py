"""User-provided MIMIC-III IHM: the restricted unpickler, the .npz path and the converter's checks
(data/formats/safe_pickle.py, data/mimic3_ihm.py), on small fake arrays in tmp_path."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from fedrepro.data import mimic3_ihm as ihm
from fedrepro.data.formats.safe_pickle import load_numpy_pickle
from fedrepro.data.prepare import load_prepared
from fedrepro.data.sources import resolve_source, write_user_provenance
from fedrepro.errors import DataError


def _xy(n: int, seed: int = 0, positives: int | None = None) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(seed)
    positives = max(1, round(0.14 * n)) if positives is None else positives
    y = [1] * positives + [0] * (n - positives)
    return rng.standard_normal((n, 48, 76)).astype(np.float32), y


def _pickle_splits(raw: Path, protocol: int = pickle.HIGHEST_PROTOCOL, **overrides) -> Path:
    raw.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", 50), ("val", 20), ("test", 30)):
        X, y = overrides.get(split, _xy(n, seed=n))
        (raw / f"{split}_raw.pkl").write_bytes(pickle.dumps((X, y), protocol=protocol))
    return raw


class _RunsShell:
    """Pickles as a call of os.system: loading it with pickle.load would run the command."""

    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_refuses_a_pickle_that_would_run_code(tmp_path):
    raw = _pickle_splits(tmp_path / "mimic3_ihm")
    evil = raw / "train_raw.pkl"
    evil.write_bytes(pickle.dumps((_RunsShell(), [0, 1])))
    with pytest.raises(DataError) as info:
        ihm.read_raw(raw)
    message = str(info.value)
    assert str(evil) in message
    assert f"{os.system.__module__}.system" in message  # posix.system: the global it refused


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_accepts_numpy_tuples_of_every_protocol(tmp_path, protocol):
    X, y = _xy(7)
    y_array = np.array(y, dtype=np.int64)
    path = tmp_path / "x.pkl"
    path.write_bytes(pickle.dumps((X, y, y_array, np.int64(3), np.float32(1.5)), protocol=protocol))
    X2, y2, y3, scalar, half = load_numpy_pickle(path)
    np.testing.assert_array_equal(X2, X)
    assert y2 == y and np.array_equal(y3, y_array) and scalar == 3 and half == 1.5


def test_prepares_pickles_into_the_prepared_layout(tmp_path):
    raw = _pickle_splits(tmp_path / "mimic3_ihm")
    out = tmp_path / "prepared" / "mimic3_ihm.npz"
    summary = ihm.prepare_mimic3_ihm(raw, out)
    arrays = load_prepared(out)
    assert sorted(arrays) == ["x_test", "x_train", "x_val", "y_test", "y_train", "y_val"]
    assert arrays["x_train"].shape == (50, 48, 76) and arrays["x_train"].dtype == np.float32
    assert arrays["y_train"].dtype == np.int64
    X, y = _xy(50, seed=50)
    np.testing.assert_array_equal(arrays["x_train"], X)
    np.testing.assert_array_equal(arrays["y_train"], y)
    assert summary["test"] == {"rows": 30, "positive_rate": pytest.approx(4 / 30)}


def test_prepares_an_npz_and_refuses_one_that_needs_pickle(tmp_path):
    raw = tmp_path / "mimic3_ihm"
    raw.mkdir()
    (X, y), (Xt, yt) = _xy(40), _xy(20, seed=1)
    np.savez(raw / "ihm.npz", X_train=X, y_train=y, X_test=Xt, y_test=yt)
    ihm.prepare_mimic3_ihm(raw, tmp_path / "out.npz")
    np.testing.assert_array_equal(load_prepared(tmp_path / "out.npz")["x_test"], Xt)

    np.savez(raw / "ihm.npz", X_train=np.array([X, "x"], dtype=object), y_train=y, X_test=Xt, y_test=yt)
    with pytest.raises(DataError, match=r"ihm\.npz: cannot be read without pickle"):
        ihm.prepare_mimic3_ihm(raw, tmp_path / "out2.npz")


@pytest.mark.parametrize("bad, expected", [
    ({"train": (np.zeros((50, 48, 75), np.float32), [0] * 43 + [1] * 7)},
     r"train_raw\.pkl \(train\): X has shape \(50, 48, 75\), expected \(n, 48, 76\)"),
    ({"test": (np.zeros((30, 48, 76), np.float32), [0] * 25 + [2] * 5)},
     r"test_raw\.pkl \(test\): labels must be binary 0/1.*\[0 2\]"),
    ({"train": (np.full((50, 48, 76), np.nan, np.float32), [0] * 43 + [1] * 7)},
     r"train_raw\.pkl \(train\): 182400 values of X are NaN or infinite \(first at .* \[0, 0, 0\]\)"),
    ({"train": _xy(50, positives=45)}, r"train_raw\.pkl \(train\): 90\.0% positive labels, outside"),
    ({"val": (np.zeros((20, 48, 76)), [0] * 19)}, r"val_raw\.pkl \(val\): y has shape \(19,\), expected \(20,\)"),
])
def test_converter_rejects_malformed_data_with_a_clear_message(tmp_path, bad, expected):
    raw = _pickle_splits(tmp_path / "mimic3_ihm", **bad)
    out = tmp_path / "out.npz"
    with pytest.raises(DataError, match=expected):
        ihm.prepare_mimic3_ihm(raw, out)
    assert not out.exists()


def test_positive_band_is_a_parameter(tmp_path):
    raw = _pickle_splits(tmp_path / "mimic3_ihm")  # 14% positives in train
    with pytest.raises(DataError, match="outside the plausible band 20%-40%"):
        ihm.prepare_mimic3_ihm(raw, tmp_path / "o.npz", positive_band=(0.2, 0.4))


def test_missing_data_says_how_to_provide_it_and_resolves_to_the_stand_in(tmp_path):
    with pytest.raises(DataError, match=r"train_raw\.pkl, test_raw\.pkl missing .*mimic3-benchmarks"):
        ihm.read_raw(tmp_path / "mimic3_ihm")
    source = resolve_source("mimic3_ihm", tmp_path)
    assert (source.key, source.real) == ("synthetic_ihm", False)
    assert "MIMIC-III not provided" in source.label and "mimic3-benchmarks" in source.note
    with pytest.raises(DataError, match="not found under"):
        write_user_provenance("mimic3_ihm", tmp_path)

    _pickle_splits(tmp_path / "mimic3_ihm")
    source = resolve_source("mimic3_ihm", tmp_path)
    assert (source.key, source.real, source.note) == ("mimic3_ihm", True, "")
    record = write_user_provenance("mimic3_ihm", tmp_path)
    assert sorted(e["name"] for e in record["files"]) == ["test_raw.pkl", "train_raw.pkl", "val_raw.pkl"]
    assert all(e["source"] == "user" and len(e["sha256"]) == 64 for e in record["files"])


def test_pool_time_means_blocks_of_hours():
    x = np.arange(2 * 48 * 3, dtype=np.float32).reshape(2, 48, 3)
    pooled = ihm.pool_time(x, 4)
    assert pooled.shape == (2, 12, 3)
    np.testing.assert_allclose(pooled[1, 5], x[1, 20:24].mean(axis=0))
    with pytest.raises(DataError, match="cannot mean-pool 48 time steps in blocks of 5"):
        ihm.pool_time(x, 5)


def test_refuses_a_pickle_whose_shared_rows_would_expand_past_its_size(tmp_path):
    """A 1.6 MB pickle whose lists repeat one row declares 400000 x 48 x 76 floats (11.7 GB as float32):
    refused from its declared shape, before anything is built (this test would otherwise run out of memory)."""
    raw = _pickle_splits(tmp_path / "mimic3_ihm")
    row = [[0.0] * 76] * 48
    bomb = raw / "train_raw.pkl"
    bomb.write_bytes(pickle.dumps(([row] * 400_000, [0] * 400_000), protocol=2))
    assert bomb.stat().st_size < 3_000_000
    with pytest.raises(DataError, match=r"train_raw\.pkl \(train\): declares 1,459,600,000 elements in a file of"):
        ihm.prepare_mimic3_ihm(raw, tmp_path / "out.npz")
    assert not (tmp_path / "out.npz").exists()


def test_refuses_an_npz_that_would_inflate_far_past_its_size(tmp_path):
    raw = tmp_path / "mimic3_ihm"
    raw.mkdir()
    zeros = np.zeros((5_000, 48, 76), np.float32)  # 73 MB of zeros compress to about 0.1 MB
    (Xt, yt) = _xy(20, seed=1)
    np.savez_compressed(raw / "ihm.npz", X_train=zeros, y_train=[0] * 5_000, X_test=Xt, y_test=yt)
    with pytest.raises(DataError, match=r"ihm\.npz: its arrays declare .* bytes in a file of .* \(more than 64x\)"):
        ihm.prepare_mimic3_ihm(raw, tmp_path / "out.npz")
