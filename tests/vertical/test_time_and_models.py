"""TDCD's time model (paper §5.2; claim C1', docs/papers/tdcd.md R21), the feature split and the silo models."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from fedrepro.data.vertical import split_features, split_sizes
from fedrepro.vertical_time import iteration_time, round_time, time_at, time_column, time_win_threshold
from fedrepro.errors import DataError
from fedrepro.models import build_model, seeded_model

# paper §5.2's t_Q / Q: per-iteration time at t_comp = 1 for t_comm = 10 and 100
TABLE = {1: (31.0, 301.0), 10: (4.0, 31.0), 20: (2.5, 16.0), 30: (2.0, 11.0)}


@pytest.mark.parametrize("Q", sorted(TABLE))
def test_per_iteration_time_reproduces_the_time_table(Q):
    for t_comm, expected in zip((10, 100), TABLE[Q]):
        assert iteration_time(Q, t_comm) == pytest.approx(expected)
        assert time_at(600, Q, t_comm) == pytest.approx(600 * expected)
        assert round_time(Q, t_comm) == pytest.approx(Q * expected)


def test_c1_prime_thresholds():
    for (Q, t_comm), expected in {(10, 10): 7.75, (10, 100): 9.71, (30, 10): 15.5, (30, 100): 27.4}.items():
        assert float(f"{time_win_threshold(Q, t_comm):.3g}") == expected  # 3 digits, as the claims
    assert time_win_threshold(1, 10) == 1.0


def test_column_names():
    assert time_column(10) == "time_tc10" and time_column(2.5) == "time_tc2.5"


def test_features_split_into_contiguous_chunks_the_first_silos_one_wider():
    assert split_sizes(76, 16) == [5] * 12 + [4] * 4 and split_sizes(76, 4) == [19] * 4
    x = np.arange(2 * 3 * 10).reshape(2, 3, 10)
    parts = split_features(x, 3, -1)
    assert [p.shape[-1] for p in parts] == [4, 3, 3]
    np.testing.assert_array_equal(np.concatenate(parts, axis=-1), x)
    with pytest.raises(DataError, match="cannot split 3 feature columns among 4 silos"):
        split_sizes(3, 4)


def test_the_written_out_lstm_computes_what_nn_lstm_computes():
    model = seeded_model("lstm", (7, 5), 1, "lstm", hidden=6)
    reference = nn.LSTM(5, 6, batch_first=True)
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(reference, f"{name}_l0").copy_(getattr(model, name))
    x = torch.randn(4, 7, 5)
    h = reference(x)[0][:, -1]
    torch.testing.assert_close(model(x), model.head(h))


def test_silo_model_shapes():
    assert build_model("cnn_s2", (3, 16, 8), 10)[-1].in_features == 128  # docs/papers/tdcd.md R23
    assert build_model("cnn_s2", (1, 16, 16), 40)[-1].in_features == 256
    cifar = build_model("resnet18_cifar", (3, 32, 16), 10)
    assert cifar.linear.in_features == 1024
    assert sum(p.numel() for p in cifar.parameters()) == pytest.approx(11.18e6, rel=0.01)  # docs/papers/tdcd.md R7
    assert cifar(torch.randn(2, 3, 32, 16)).shape == (2, 10)
    imagenet = build_model("resnet18_imagenet", (3, 64, 64), 1000)
    assert imagenet(torch.randn(2, 3, 64, 64)).shape == (2, 1000)
    assert sum(p.numel() for p in imagenet.parameters()) == 11_689_512  # torchvision's resnet18
    lstm = build_model("lstm", (48, 19), 1, hidden=16)
    assert sum(p.numel() for p in lstm.parameters()) == 2385  # docs/papers/tdcd.md R7, N = 4
