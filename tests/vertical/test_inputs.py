"""What a vertical run trains on: seeded subsets shared by every run of the same data and size, time pooling,
uint8 multi-view images as standardised floats split one view per silo, and the prepared folder loaded."""

from __future__ import annotations

import numpy as np
import pytest

from fedrepro.data.inputs import load_input, prepared_name, prepared_path
from fedrepro.data.synthetic import write_twelve_view
from fedrepro.engines.vertical_inputs import model_inputs, subset_index
from fedrepro.errors import ConfigError
from fedrepro.experiments.execute import execute_run
from fedrepro.experiments.runtable import run_id_of
from fedrepro.experiments.store import RunFiles
from fedrepro.schemas import check

BASE = {"dataset": "synthetic_ihm", "train_subset": 30, "test_subset": 10}


def test_a_subset_depends_on_the_data_and_its_size_only():
    a = subset_index({**BASE, "Q": 1, "lr": 0.1, "K": 2}, "train", 100)
    b = subset_index({**BASE, "Q": 30, "lr": 0.01, "K": 5}, "train", 100)
    assert np.array_equal(a, b) and len(a) == 30 and np.all(np.diff(a) > 0)
    assert not np.array_equal(a, subset_index({**BASE, "dataset": "other"}, "train", 100))
    assert not np.array_equal(subset_index({**BASE, "train_subset": 31}, "train", 100)[:30], a)
    assert subset_index({"dataset": "d"}, "train", 100) is None
    with pytest.raises(ConfigError, match="exceeds"):
        subset_index(BASE, "train", 20)


def test_model_inputs_take_subsets_and_pool_time():
    rng = np.random.default_rng(0)
    arrays = {"x_train": rng.normal(size=(100, 8, 5)).astype(np.float32), "y_train": np.arange(100) % 2,
              "x_test": rng.normal(size=(40, 8, 5)).astype(np.float32), "y_test": np.arange(40) % 2}
    out = model_inputs({**BASE, "time_pool": 4}, arrays)
    index = subset_index(BASE, "train", 100)
    assert out["x_train"].shape == (30, 2, 5) and out["x_test"].shape == (10, 2, 5)
    np.testing.assert_allclose(out["x_train"][:, 0], arrays["x_train"][index, :4].mean(axis=1), rtol=1e-6)
    assert np.array_equal(out["y_train"], arrays["y_train"][index])
    with pytest.raises(ConfigError, match="time_pool"):
        model_inputs({"dataset": "d", "time_pool": 3}, {**arrays, "x_train": arrays["x_train"][:, :, 0]})


def test_uint8_views_become_standardised_floats():
    rng = np.random.default_rng(1)
    views = {"x_train": rng.integers(0, 256, size=(50, 12, 1, 4, 4), dtype=np.uint8), "y_train": np.zeros(50),
             "x_test": rng.integers(0, 256, size=(20, 12, 1, 4, 4), dtype=np.uint8), "y_test": np.zeros(20)}
    out = model_inputs({"dataset": "synthetic_12view"}, views)
    assert out["x_train"].dtype == np.float32
    assert abs(out["x_train"].mean()) < 1e-4 and abs(out["x_train"].std() - 1) < 1e-3
    with pytest.raises(ConfigError, match="imagenet"):
        model_inputs({"dataset": "synthetic_12view", "image_norm": "imagenet"}, views)


def test_a_multiview_run_reads_its_folder_one_view_per_silo(tmp_path):
    spec = {"paper": "tdcd", "engine": "vertical", "method": "tdcd", "dataset": "synthetic_12view",
            "image_channels": 1, "image_side": 8, "split_axis": 1, "squeeze_split": True, "model": "cnn_s2",
            "out_dim": 40, "test_metric": "top5", "N": 12, "K": 2, "Q": 2, "B": 16, "lr": 0.05, "t_comm": [10],
            "iterations": 4, "eval_every": 2, "backend": "vectorized", "train_eval_subsample": 20, "seeds": 1,
            "train_subset": 40, "test_subset": 20}
    check(spec, "vertical_run.schema.yaml", "test spec")
    assert prepared_name(spec) == "synthetic_12view_gray8"
    folder = tmp_path / prepared_path(spec)
    write_twelve_view(folder, n_train=60, n_test=30, side=8)
    assert load_input(folder)["x_train"].shape == (60, 12, 1, 8, 8)
    provenance = tmp_path / "PROVENANCE.json"
    provenance.write_text('{"dataset": "synthetic_12view", "files": []}')
    rid = run_id_of(spec)
    files = RunFiles(tmp_path / "runs" / rid)
    record = execute_run(rid, spec, files, folder, [provenance], device="cpu",
                         log_path=tmp_path / "run.log")
    assert record["summary"]["silo_input_shapes"] == [[1, 8, 8]] * 12
    assert "test_top5" in files.metrics.read_text().splitlines()[0]
