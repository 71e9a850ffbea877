"""Decoders and prepare/load on small synthetic files (the real data: test_data_mirror.py)."""

from __future__ import annotations

import gzip
import io
import pickle
import tarfile
from pathlib import Path

import numpy as np
import pytest

from fedrepro.errors import DataError
from fedrepro.data.formats.cifar import read_cifar10
from fedrepro.data.formats.idx import read_idx_ubyte
from fedrepro.data.formats.insurance import read_insurance
from fedrepro.data.formats.svmlight import read_svmlight_binary
from fedrepro.data.prepare import load_prepared, prepare_dataset

# --- idx ----------------------------------------------------------------------------


def _idx(path: Path, array: np.ndarray, magic: int | None = None) -> Path:
    magic = (0x08 << 8 | array.ndim) if magic is None else magic
    header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in array.shape)
    path.write_bytes(gzip.compress(header + array.astype(np.uint8).tobytes()))
    return path


def test_idx_round_trip(tmp_path):
    images = np.arange(3 * 4 * 5, dtype=np.uint8).reshape(3, 4, 5)
    decoded = read_idx_ubyte(_idx(tmp_path / "x-idx3-ubyte.gz", images), ndim=3)
    assert decoded.dtype == np.uint8
    np.testing.assert_array_equal(decoded, images)


def test_idx_wrong_magic_is_refused(tmp_path):
    labels = _idx(tmp_path / "y-idx1-ubyte.gz", np.zeros(7, np.uint8))
    with pytest.raises(DataError, match=r"y-idx1-ubyte\.gz: not an idx file of 3-d"):
        read_idx_ubyte(labels, ndim=3)  # a label file where images are expected


def test_idx_size_disagreeing_with_header_is_refused(tmp_path):
    path = tmp_path / "short.gz"
    path.write_bytes(gzip.compress((0x801).to_bytes(4, "big") + (10).to_bytes(4, "big") + bytes(9)))
    with pytest.raises(DataError, match=r"shape \(10,\) \(10 bytes\) but 9 bytes follow"):
        read_idx_ubyte(path, ndim=1)


# --- svmlight -----------------------------------------------------------------------


def test_svmlight_parses_one_based_sparse_rows(tmp_path):
    path = tmp_path / "toy"
    path.write_bytes(b"+1 1:1 3:1 \n-1\n\n-1 2:1 4:1\n\n")  # trailing spaces, empty rows, blank lines
    X, y = read_svmlight_binary(path, n_features=4)
    np.testing.assert_array_equal(X, [[1, 0, 1, 0], [0, 0, 0, 0], [0, 1, 0, 1]])
    np.testing.assert_array_equal(y, [1, -1, -1])
    assert X.dtype == np.uint8 and y.dtype == np.int8


@pytest.mark.parametrize(
    ("second_line", "problem"),
    [
        (b"+1 2:1 5:1", ", line 2: feature index outside 1..4"),
        (b"+1 0:1", ", line 2: feature index outside 1..4"),
        (b"-1 2:0.5", ", line 2: feature value other than 0 or 1"),
        (b"+1 2:2", ", line 2: feature value other than 0 or 1"),
        (b"2 1:1", ", line 2: expected label"),
        (b"+1 3", ": expected lines"),  # scikit-learn's parser does not say which line
    ],
)
def test_svmlight_malformed_input_names_file_and_line(tmp_path, second_line, problem):
    path = tmp_path / "broken"
    path.write_bytes(b"-1 1:1\n" + second_line + b"\n-1 4:1\n")
    with pytest.raises(DataError, match=f"broken{problem}"):
        read_svmlight_binary(path, n_features=4)


# --- insurance ----------------------------------------------------------------------

_INSURANCE_ROWS = [
    "19,female,27.9,0,yes,southwest,16884.924",
    "18,male,33.77,1,no,southeast,1725.5523",
    "28,male,33,3,no,northwest,4449.462",
]


def test_insurance_columns_and_codes(tmp_path):
    path = tmp_path / "insurance.csv"
    path.write_bytes("\r\n".join(["age,sex,bmi,children,smoker,region,charges", *_INSURANCE_ROWS]).encode())
    cols = read_insurance(path)
    np.testing.assert_array_equal(cols["age"], [19.0, 18.0, 28.0])
    np.testing.assert_array_equal(cols["sex"], [0, 1, 1])
    np.testing.assert_array_equal(cols["smoker"], [1, 0, 0])
    np.testing.assert_array_equal(cols["region_names"], ["northwest", "southeast", "southwest"])
    np.testing.assert_array_equal(
        cols["region_names"][cols["region"]], ["southwest", "southeast", "northwest"]
    )
    np.testing.assert_allclose(cols["charges"], [16884.924, 1725.5523, 4449.462])
    assert cols["sex"].dtype == np.int8 and cols["region"].dtype == np.int8
    assert cols["bmi"].dtype == cols["children"].dtype == np.float64


def test_insurance_old_copy_with_expenses_column_is_refused(tmp_path):
    path = tmp_path / "insurance.csv"
    path.write_text("age,sex,bmi,children,smoker,region,expenses\n19,female,27.9,0,yes,southwest,16884.92\n")
    with pytest.raises(DataError, match="older copy"):
        read_insurance(path)


def test_insurance_bad_value_names_the_line(tmp_path):
    path = tmp_path / "insurance.csv"
    path.write_text(
        "age,sex,bmi,children,smoker,region,charges\n" + _INSURANCE_ROWS[0] + "\n19,other,1,0,no,x,1\n"
    )
    with pytest.raises(DataError, match=r"insurance\.csv, line 3"):
        read_insurance(path)


def test_prepare_insurance_checks_row_count_and_charges(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "insurance.csv").write_text(
        "age,sex,bmi,children,smoker,region,charges\n" + "\n".join(_INSURANCE_ROWS)
    )
    with pytest.raises(DataError, match="3 rows .* expected 1338 rows"):
        prepare_dataset("insurance", raw, tmp_path / "insurance.npz")
    assert not (tmp_path / "insurance.npz").exists()


# --- cifar --------------------------------------------------------------------------


def _cifar_tar(path: Path, batches: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, payload in batches.items():
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return path


def _batch(first_label: int, n: int = 2) -> bytes:
    data = np.arange(n * 3072, dtype=np.int64).reshape(n, 3072) % 251
    return pickle.dumps(
        {b"data": data.astype(np.uint8), b"labels": [first_label + i for i in range(n)]}, protocol=2
    )


def test_cifar_batches_become_hwc_arrays(tmp_path):
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    archive = _cifar_tar(tmp_path / "c.tar.gz", {name: _batch(2 * k) for k, name in enumerate(names)})
    arrays = read_cifar10(archive, tmp_path)
    assert arrays["x_train"].shape == (10, 32, 32, 3) and arrays["x_test"].shape == (2, 32, 32, 3)
    np.testing.assert_array_equal(arrays["y_train"], np.arange(10))
    np.testing.assert_array_equal(arrays["y_test"], [10, 11])
    row = (np.arange(3072) % 251).astype(np.uint8)  # the first image's flat CHW row
    # Pixel (i, j) of channel c sits at 1024 c + 32 i + j in a row.
    assert arrays["x_train"][0, 1, 2, 0] == row[0 * 1024 + 32 + 2]
    assert arrays["x_train"][0, 5, 7, 2] == row[2 * 1024 + 5 * 32 + 7]
    assert arrays["y_train"].dtype == np.int64
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.tar.gz"]  # extraction cleaned up


class _Exploit:
    def __reduce__(self):
        return (print, ("pwned",))


def test_cifar_batch_with_foreign_globals_is_refused(tmp_path):
    archive = _cifar_tar(tmp_path / "c.tar.gz", {"data_batch_1": pickle.dumps(_Exploit(), protocol=2)})
    with pytest.raises(DataError, match=r"global __builtin__\.print is not allowed"):
        read_cifar10(archive, tmp_path)


# --- prepare / load -----------------------------------------------------------------


def test_prepare_requires_fetched_files(tmp_path):
    (tmp_path / "a9a").write_text("")
    with pytest.raises(DataError, match=r"a9a\.t not found .* fetch the dataset first"):
        prepare_dataset("a9a", tmp_path, tmp_path / "a9a.npz")


def test_unknown_dataset_lists_the_known_ones(tmp_path):
    with pytest.raises(DataError, match="unknown dataset 'mnsit'; known: a9a, cifar10"):
        prepare_dataset("mnsit", tmp_path, tmp_path / "x.npz")


def test_load_prepared_errors_are_data_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        load_prepared(tmp_path / "missing.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip file")
    with pytest.raises(DataError, match="not a valid prepared dataset"):
        load_prepared(tmp_path / "junk.npz")
