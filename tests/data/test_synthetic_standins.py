"""TDCD's synthetic stand-ins (data/synthetic.py): deterministic for a seed, and with the property each
one is built for. Sizes are the reduced profile's or smaller, so each test takes well under a second."""

from __future__ import annotations

import numpy as np
import pytest

from fedrepro.data import mimic3_ihm as ihm
from fedrepro.data import synthetic
from fedrepro.data.multiview import load_multiview
from fedrepro.data.sources import synthesize, write_standin_provenance
from fedrepro.data.views import make_view
from fedrepro.data.vertical import split_features

# The MIMIC-III benchmark's value columns (its discretizer_config.json header order), written out apart from the
# stand-in's own layout (synthetic.IHM_CHANNEL_COLUMNS): [start, stop) of each categorical channel's one-hot block,
# and the continuous columns.
ONE_HOT_BLOCKS: tuple[tuple[int, int], ...] = (
    (0, 2),  # capillary refill rate
    (4, 12),  # Glasgow coma scale eye opening
    (12, 24),  # GCS motor response
    (24, 37),  # GCS total
    (37, 49),  # GCS verbal response
)
CONTINUOUS_COLUMNS: tuple[int, ...] = (2, 3, *range(49, 59))  # normalised values, about N(0, 1)


def test_split_pair_classes_need_both_halves():
    parts = [synthetic.splitpair_class_parts(c) for c in range(10)]
    assert len(set(parts)) == 10  # the pair of prototypes identifies the class
    for half in (0, 1):  # ... but each prototype is shared by exactly two classes
        assert sorted(np.bincount([p[half] for p in parts])) == [2] * 5

    data = synthetic.split_pair_cifar(2000, 500, seed=3, noise=0.0, max_shift=0)
    assert data["x_train"].shape == (2000, 32, 32, 3) and data["x_train"].dtype == np.uint8
    view = make_view(data, "tdcd_pool2")  # the reduced profile's 3x16x16 input
    left, right = split_features(view["x_train"], 2, axis=3)
    y = data["y_train"]
    # without noise, a half is one of 5 patterns: classes c and c' look the same in the left half iff
    # c // 2 == c' // 2, in the right half iff c % 5 == c' % 5
    for half, part in ((left, 0), (right, 1)):
        means = np.stack([half[y == c].mean(axis=0) for c in range(10)])
        for a in range(10):
            for b in range(a + 1, 10):
                same = parts[a][part] == parts[b][part]
                assert np.allclose(means[a], means[b], atol=0.05) == same, (a, b, part)


def test_split_pair_is_deterministic_and_noisy_images_are_centred_like_cifar():
    a = synthetic.split_pair_cifar(300, 100, seed=1)
    b = synthetic.split_pair_cifar(300, 100, seed=1)
    c = synthetic.split_pair_cifar(300, 100, seed=2)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["x_train"], c["x_train"])
    assert np.array_equal(synthetic.split_pair_cifar(50, 100, seed=1)["x_test"], a["x_test"])  # test set independent of n_train
    x = make_view(a, "tdcd")["x_train"]
    assert abs(float(x.mean())) < 0.1 and 0.8 < float(x.std()) < 1.3  # about standardised, as CIFAR
    assert np.bincount(a["y_train"]).tolist() == [30] * 10


def test_synthetic_ihm_layout_and_rate():
    data = synthetic.synthetic_ihm(3000, 1000, seed=0)
    x, y = data["x_train"], data["y_train"]
    assert x.shape == (3000, 48, 76) and x.dtype == np.float32 and y.dtype == np.int64
    assert 0.14 < y.mean() < 0.18 and 0.12 < data["y_test"].mean() < 0.20  # 16% in expectation
    for start, stop in ONE_HOT_BLOCKS:
        block = x[:, :, start:stop]
        assert np.isin(block, (0, 1)).all() and (block.sum(axis=-1) == 1).all()
    masks = x[:, :, list(ihm.MASK_COLUMNS)]
    assert np.isin(masks, (0, 1)).all() and 0.2 < masks.mean() < 0.8
    values = x[:, :, list(CONTINUOUS_COLUMNS)]
    assert abs(values.mean()) < 0.1 and 0.7 < values.std() < 1.3
    covered = {c for a, b in ONE_HOT_BLOCKS for c in range(a, b)} | set(CONTINUOUS_COLUMNS) | set(ihm.MASK_COLUMNS)
    assert covered == set(range(76))
    # the converter of real data accepts it
    ihm.check_split("train", x, y, "synthetic")


def test_synthetic_ihm_every_silo_carries_signal_and_is_deterministic():
    data = synthetic.synthetic_ihm(3000, 10, seed=0)
    x, y = ihm.pool_time(data["x_train"], 4), data["y_train"]
    for j, block in enumerate(split_features(x, 4)):
        feats = block.mean(axis=1)  # per-patient time average of the silo's columns
        gap = np.abs(feats[y == 1].mean(axis=0) - feats[y == 0].mean(axis=0)) / (feats.std(axis=0) + 1e-6)
        assert gap.max() > 0.3, f"silo {j} carries no label signal"
    again = synthetic.synthetic_ihm(3000, 10, seed=0)
    assert np.array_equal(again["x_train"], data["x_train"])
    assert not np.array_equal(synthetic.synthetic_ihm(20, 10, seed=1)["x_train"], data["x_train"][:20])


def test_twelve_view_classes_and_distinct_views(tmp_path):
    out = tmp_path / "synthetic_12view_gray16"
    synthesize("synthetic_12view", out, n_train=400, n_test=80, seed=0, side=16)
    data = load_multiview(out)
    x, y = data["x_train"], data["y_train"]
    assert x.shape == (400, 12, 1, 16, 16) and x.dtype == np.uint8
    assert sorted(set(y.tolist())) == list(range(40)) and data["meta"]["classes"][39] == "class39"
    for i in range(5):  # the 12 cameras see 12 different images of the same object
        flat = x[i].reshape(12, -1).astype(int)
        assert len({row.tobytes() for row in flat}) == 12
        assert min(np.abs(flat[a] - flat[b]).mean() for a in range(12) for b in range(a + 1, 12)) > 1
    # class means differ in every view (each silo is informative)
    means = np.stack([x[y == c].astype(float).mean(axis=0) for c in range(40)])  # (40, 12, 1, 16, 16)
    spread = means.std(axis=0).mean(axis=(1, 2, 3))
    assert (spread > 2).all()
    again = tmp_path / "again"
    synthesize("synthetic_12view", again, n_train=400, n_test=80, seed=0, side=16)
    assert np.array_equal(load_multiview(again)["x_test"], data["x_test"])


def test_standin_files_and_provenance(tmp_path):
    synthesize("synthetic_ihm", tmp_path / "s.npz", n_train=30, n_test=10)
    with np.load(tmp_path / "s.npz", allow_pickle=False) as npz:
        assert sorted(npz.files) == ["x_test", "x_train", "y_test", "y_train"]
    record = write_standin_provenance("synthetic_ihm", tmp_path)
    assert record["files"] == [] and record["synthetic"]["seed"] == synthetic.SEED
    assert "MIMIC-III not provided" in record["synthetic"]["label"]
    assert record["synthetic"]["params"]["positive_rate"] == 0.16  # the generator's defaults, as synthesize runs


def test_a_run_on_a_standin_records_the_generated_data_and_the_audit_checks_it(tmp_path):
    """No file was downloaded, so the run records what it read: the generated arrays' sha256 with the generator,
    its seed and parameters; the audit finds them changed like a downloaded file."""
    from fedrepro.results.audit import Checkout, _data_findings
    from fedrepro.experiments.provenance import data_files

    synthesize("synthetic_ihm", tmp_path / "data" / "prepared" / "synthetic_ihm.npz", n_train=30, n_test=10)
    write_standin_provenance("synthetic_ihm", tmp_path / "data" / "raw")
    synthesize("synthetic_12view", tmp_path / "data" / "prepared" / "views", n_train=24, n_test=12, side=16)
    prepared = [tmp_path / "data" / "prepared" / "synthetic_ihm.npz", tmp_path / "data" / "prepared" / "views"]
    entries = data_files([tmp_path / "data" / "raw" / "synthetic_ihm" / "PROVENANCE.json"], prepared, tmp_path)
    assert [e["path"] for e in entries] == ["data/prepared/synthetic_ihm.npz", "data/prepared/views"]
    assert all(len(e["sha256"]) == 64 and e["source"] == "synthetic" and e["seed"] == synthetic.SEED
               and e["generator"].endswith("synthetic_ihm") for e in entries)

    def statuses():
        return [f.status for f in _data_findings({"data_files": entries}, Checkout.of(tmp_path))]

    assert statuses() == ["OK", "OK"]
    label = next((tmp_path / "data" / "prepared" / "views").rglob("*labels*"))
    label.write_bytes(label.read_bytes()[:-1] + bytes([label.read_bytes()[-1] ^ 1]))  # one bit of the folder
    assert statuses() == ["OK", "FAIL"]


def test_tdcd_views_standardise_with_cifar_statistics():
    pixels = np.zeros((2, 32, 32, 3), np.uint8)
    pixels[..., 0], pixels[..., 1], pixels[..., 2] = 0, 128, 255
    arrays = {"x_train": pixels, "y_train": np.zeros(2, np.int64), "x_test": pixels[:1], "y_test": np.zeros(1, np.int64)}
    view = make_view(arrays, "tdcd_pool2")
    assert view["x_train"].shape == (2, 3, 16, 16)
    expected = [(0 - 0.4914) / 0.247, (128 / 255 - 0.4822) / 0.243, (1 - 0.4465) / 0.261]
    np.testing.assert_allclose(view["x_train"][0, :, 3, 3], expected, rtol=1e-5)
    np.testing.assert_allclose(view["mean"], [255 * 0.4914, 255 * 0.4822, 255 * 0.4465])
