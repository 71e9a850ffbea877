"""DeFedAvg's models (paper §4.1.1; docs/papers/defedavg.md R6, R28): the paper CNN's size and the reduced-scale
MLP input view."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrepro.data.views import view_images
from fedrepro.models import build_model


def _n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("shape,expected", [((1, 28, 28), 582_026), ((3, 32, 32), 878_538)])
def test_paper_cnn_parameter_count(shape, expected):
    model = build_model("cnn_defedavg", shape, 10)
    assert _n_params(model) == expected
    assert model(torch.zeros(2, *shape)).shape == (2, 10)


def test_paper_cnn_flatten_width_is_the_papers_1600_on_cifar():
    model = build_model("cnn_defedavg", (3, 32, 32), 10)
    fc1 = [m for m in model if isinstance(m, torch.nn.Linear)][0]
    assert fc1.in_features == 1600 and fc1.out_features == 512


def test_tiny_variant_has_the_same_topology():
    big, tiny = build_model("cnn_defedavg", (1, 28, 28), 10), build_model("cnn_defedavg_tiny", (1, 28, 28), 10)
    assert [type(m) for m in big] == [type(m) for m in tiny]
    assert _n_params(tiny) == (25 * 8 + 8) + (8 * 25 * 16 + 16) + (16 * 16 * 64 + 64) + (64 * 10 + 10)


def test_paper_cnn_rejects_inputs_too_small():
    with pytest.raises(ValueError, match="too small"):
        build_model("cnn_defedavg", (1, 14, 14), 10)


@pytest.mark.parametrize("hw,channels,width", [((28, 28), 1, 196), ((32, 32, 3), 3, 768)])
def test_mlp_small_is_the_mlp_on_the_pool2_view(hw, channels, width):
    images = np.random.default_rng(0).integers(0, 256, size=(4, *hw), dtype=np.uint8)
    x = view_images(images, "pool2")
    assert x.shape[1:] == (channels, hw[0] // 2, hw[1] // 2)
    expected = images.reshape(4, hw[0] // 2, 2, hw[1] // 2, 2, channels).astype(np.float32).mean(axis=(2, 4))
    np.testing.assert_allclose(x, expected.transpose(0, 3, 1, 2), rtol=1e-6)
    model = build_model("mlp", x.shape[1:], 10)
    assert _n_params(model) == width * 64 + 64 + 64 * 10 + 10
