"""What a vertical run trains on: seeded subsets shared by every run of the same data and size, time pooling,
uint8 multi-view images kept uint8 on the device and standardised a batch at a time (bit for bit the whole array
standardised), split one view per silo, and the prepared folder loaded."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from fedrepro.data.inputs import load_input, prepared_name, prepared_path
from fedrepro.data.synthetic import write_twelve_view
from fedrepro.engines.vertical import Environment
from fedrepro.engines.vertical_inputs import IMAGENET_MEAN, IMAGENET_STD, model_inputs, subset_index
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


def test_uint8_views_stay_uint8_with_the_levels_that_standardise_them():
    rng = np.random.default_rng(1)
    views = {"x_train": rng.integers(0, 256, size=(50, 12, 1, 4, 4), dtype=np.uint8), "y_train": np.zeros(50),
             "x_test": rng.integers(0, 256, size=(20, 12, 1, 4, 4), dtype=np.uint8), "y_test": np.zeros(20)}
    out = model_inputs({"dataset": "synthetic_12view"}, views)
    assert out["x_train"].dtype == np.uint8 and out["levels"].dtype == np.float32 and out["levels"].shape == (1, 256)
    train = out["levels"][0][out["x_train"]]
    assert abs(train.mean()) < 1e-4 and abs(train.std() - 1) < 1e-3
    with pytest.raises(ConfigError, match="imagenet"):
        model_inputs({"dataset": "synthetic_12view", "image_norm": "imagenet"}, views)


def _standardised_whole(x_train: np.ndarray, x: np.ndarray, how: str) -> np.ndarray:
    """The float32 path the views took before they stayed uint8: the whole array x / 255, standardised."""
    train = x_train.astype(np.float32) / 255
    if how == "train":
        axes = (0, 1, 3, 4)
        mean, std = train.mean(axis=axes, dtype=np.float64), train.std(axis=axes, dtype=np.float64)
    else:
        mean, std = np.array(IMAGENET_MEAN), np.array(IMAGENET_STD)
    shift, scale = (a.astype(np.float32).reshape(-1, 1, 1) for a in (mean, std))
    return (x.astype(np.float32) / 255 - shift) / scale


@pytest.mark.parametrize("how", ["train", "imagenet"])
def test_views_stay_uint8_on_the_device_and_a_batch_is_the_whole_float32_path(how):
    rng = np.random.default_rng(2)
    views = {"x_train": rng.integers(0, 256, size=(30, 12, 3, 5, 5), dtype=np.uint8), "y_train": np.arange(30) % 4,
             "x_test": rng.integers(0, 256, size=(10, 12, 3, 5, 5), dtype=np.uint8), "y_test": np.arange(10) % 4}
    spec = {"dataset": "synthetic_12view", "image_norm": how, "N": 12, "split_axis": 1, "squeeze_split": True,
            "K": 2, "B": 8}
    env = Environment(spec, views, SimpleNamespace(device=torch.device("cpu")))
    silo = env.train[5]
    assert getattr(silo, "images", silo).dtype == torch.uint8 and silo.shape == (30, 3, 5, 5)
    expected = torch.from_numpy(_standardised_whole(views["x_train"], views["x_train"][:, 5], how))
    rows = torch.tensor([[3, 0, 29], [7, 7, 1]])  # a (K, width) gather, as the vectorized silos take a round's batch
    for index in (rows, slice(2, 9)):
        assert silo[index].dtype == torch.float32 and torch.equal(silo[index], expected[index])
    test = torch.from_numpy(_standardised_whole(views["x_train"], views["x_test"][:, 11], how))
    assert torch.equal(env.test[11][:], test)


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
