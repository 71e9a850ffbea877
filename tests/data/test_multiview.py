"""ModelNet40 12-view from a user's folder tree (data/multiview.py), on tiny PNG trees made with PIL."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from fedrepro.data.multiview import load_multiview, prepare_modelnet40_12view, sorted_views
from fedrepro.data.sources import resolve_source, write_user_provenance
from fedrepro.errors import DataError

CLASSES = ("chair", "airplane")
OBJECTS = {"train": 2, "test": 1}


def _value(label: int, obj: int, view: int) -> int:
    return 10 * view + 3 * obj + label  # distinct per (class, object, camera), < 256


def _tree(root: Path, size: int = 8) -> Path:
    """classes/<class>/<split>/<object>/<12 PNGs> named view1..view12 (not zero-padded: a plain string
    sort would put view10 before view2), written in a shuffled order."""
    order = np.random.default_rng(0).permutation(12) + 1
    for label, name in enumerate(sorted(CLASSES)):
        for split, count in OBJECTS.items():
            for obj in range(count):
                folder = root / "classes" / name / split / f"{name}_{obj:04d}"
                folder.mkdir(parents=True)
                for camera in order:
                    grey = np.full((size, size), _value(label, obj, camera - 1), np.uint8)
                    rgb = np.stack([grey, grey // 2, 255 - grey], axis=-1)
                    Image.fromarray(rgb).save(folder / f"{name}_{obj:04d}_view{camera}.png")
    return root


def test_views_come_out_in_camera_order(tmp_path):
    raw = _tree(tmp_path / "modelnet40_12view")
    some_object = raw / "classes" / "chair" / "train" / "chair_0000"
    listed = [p.name for p in some_object.iterdir()]
    assert sorted(listed) != [p.name for p in sorted_views(some_object)]  # plain sorting would be wrong

    out = tmp_path / "prepared" / "modelnet40_12view_rgb8"
    assert prepare_modelnet40_12view(raw, out, side=8, channels=3) == {"train": 4, "test": 2}
    data = load_multiview(out)
    x, y = data["x_train"], data["y_train"]
    assert isinstance(x, np.memmap) and x.dtype == np.uint8 and x.shape == (4, 12, 3, 8, 8)
    assert data["meta"]["classes"] == ["airplane", "chair"]
    np.testing.assert_array_equal(y, [0, 0, 1, 1])  # labels are the sorted class folders' indices
    for i, (label, obj) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
        for camera in range(12):
            v = _value(label, obj, camera)
            np.testing.assert_array_equal(x[i, camera, :, 0, 0], [v, v // 2, 255 - v])
    assert data["x_test"].shape == (2, 12, 3, 8, 8)
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_grey_and_resized(tmp_path):
    raw = _tree(tmp_path / "modelnet40_12view", size=12)
    out = tmp_path / "g"
    prepare_modelnet40_12view(raw, out, side=4, channels=1)
    data = load_multiview(out)
    assert data["x_train"].shape == (4, 12, 1, 4, 4)
    assert json.loads((out / "meta.json").read_text())["side"] == 4
    # uniform images stay uniform when resized; PIL's grey is a weighted sum of R, G, B
    assert len(np.unique(data["x_train"][1, 5])) == 1


def test_layout_errors_name_the_problem(tmp_path):
    with pytest.raises(DataError, match=r"classes is not a directory.*github\.com/rpi-nsl/TDCD"):
        prepare_modelnet40_12view(tmp_path / "absent", tmp_path / "o")

    raw = _tree(tmp_path / "a")
    os.rename(raw / "classes" / "chair" / "test", raw / "classes" / "chair" / "tst")
    with pytest.raises(DataError, match=r"class 'chair': .*chair/test is missing"):
        prepare_modelnet40_12view(raw, tmp_path / "o")

    raw = _tree(tmp_path / "b")
    obj = raw / "classes" / "airplane" / "train" / "airplane_0001"
    (obj / "airplane_0001_view7.png").unlink()
    with pytest.raises(DataError, match=r"airplane_0001: 11 PNG views, expected 12"):
        prepare_modelnet40_12view(raw, tmp_path / "o")

    raw = _tree(tmp_path / "c")
    broken = raw / "classes" / "chair" / "test" / "chair_0000" / "chair_0000_view3.png"
    broken.write_bytes(b"not a png at all")
    out = tmp_path / "o"
    with pytest.raises(DataError, match=r"chair_0000_view3\.png: not a readable PNG"):
        prepare_modelnet40_12view(raw, out)
    assert not out.exists() and not list(tmp_path.glob(".o.*"))  # nothing half-written left behind


def test_resolution_and_provenance(tmp_path):
    source = resolve_source("modelnet40_12view", tmp_path)
    assert (source.key, source.real) == ("synthetic_12view", False)
    _tree(tmp_path / "modelnet40_12view")
    assert resolve_source("modelnet40_12view", tmp_path).real
    record = write_user_provenance("modelnet40_12view", tmp_path)
    [entry] = record["files"]
    listing = (tmp_path / "modelnet40_12view" / entry["name"]).read_text().splitlines()
    assert len(listing) == 2 * 3 * 12 and listing[0].endswith("classes/airplane/test/airplane_0000/airplane_0000_view1.png")


def test_loading_an_incomplete_folder_is_a_data_error(tmp_path):
    (tmp_path / "p").mkdir()
    with pytest.raises(DataError, match="not a complete prepared multi-view folder"):
        load_multiview(tmp_path / "p")
