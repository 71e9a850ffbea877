"""The vectorized backend's conv-net path on the CPU (nn/convnets.py): D clients' forward as one grouped
graph, which models take it, and the backend `auto` picks. Training equality with the loop backend, for
every algorithm and optimizer, is in test_backends.py and test_clients.py (SHAPES holds the conv nets)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fedrepro.nn.clients import VECTORIZED_ON_CPU, client_backend
from fedrepro.models import MODELS, build_model
from fedrepro.nn import BACKENDS, FlatModel
from fedrepro.nn.convnets import grouped_convnet, grouped_forward, replicated_forward, stacked_channels_last
from fedrepro.nn.evaluate import evaluate
from fedrepro.nn.gradients import plain_mlp

from nn_testdata import make_problem, make_streams

CONV_SHAPES = {"cnn_tiny": (3, 14, 14), "cnn_defedavg_tiny": (1, 16, 16), "alexnet": (3, 28, 28)}


@pytest.mark.parametrize("model", sorted(CONV_SHAPES))
def test_grouped_forward_equals_each_clients_own_forward(model):
    torch.manual_seed(0)
    flat = FlatModel(build_model(model, CONV_SHAPES[model], 10).double())
    D, B = 3, 2
    gen = torch.Generator().manual_seed(1)
    W = flat.flatten() + 0.1 * torch.randn(D, flat.n_params, generator=gen, dtype=torch.float64)
    x = torch.randn(D, B, *CONV_SHAPES[model], generator=gen, dtype=torch.float64)
    got = grouped_forward(flat.module, flat.unstack(flat.stack(W, D), D), x)
    want = torch.stack([flat.forward(W[d], x[d]) for d in range(D)])
    assert not torch.allclose(want[0], want[1])  # the clients' parameters differ
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("C", [1, 3])
def test_clients_are_stacked_as_channels_in_channels_last_memory(C):
    """The layout the grouped kernels are fast in, for 1-channel inputs too (MNIST, Fashion-MNIST, gray views):
    the convolutions keep their input's layout, so an NCHW start would run every layer in the slow kernels."""
    D, B, H, W = 4, 3, 5, 6
    x = torch.randn(D, B, C, H, W)
    h = stacked_channels_last(x)
    assert h.shape == (B, D * C, H, W)
    assert h.is_contiguous(memory_format=torch.channels_last)
    for d in range(D):
        torch.testing.assert_close(h[:, d * C:(d + 1) * C], x[d], rtol=0, atol=0)


@pytest.mark.parametrize("model", sorted(CONV_SHAPES))
@pytest.mark.parametrize("n, copies", [(11, 4), (8, 8), (3, 5), (1, 1)])
def test_replicated_forward_equals_the_modules_own(model, n, copies):
    """One model through copies of itself as grouped clients, with batches that do not divide evenly."""
    torch.manual_seed(0)
    flat = FlatModel(build_model(model, CONV_SHAPES[model], 10).double())
    x = torch.randn(n, *CONV_SHAPES[model], dtype=torch.float64)
    W = flat.flatten()
    got = replicated_forward(flat.module, flat.unflatten(W), x, copies)
    torch.testing.assert_close(got, flat.forward(W, x), rtol=1e-12, atol=1e-12)


def test_evaluation_of_a_conv_net_equals_the_modules_forward():
    torch.manual_seed(0)
    flat = FlatModel(build_model("cnn_tiny", CONV_SHAPES["cnn_tiny"], 10).double())
    x, y = torch.randn(37, *CONV_SHAPES["cnn_tiny"], dtype=torch.float64), torch.randint(0, 10, (37,))
    W = flat.flatten()
    index, weights = torch.tensor([0, 5, 5, 36, 7]), torch.tensor([1.0, 2.0, 1.0, 3.0, 1.0], dtype=torch.float64)
    got = evaluate(flat, W, x, y, index, weights, batch_size=3)
    logits = flat.forward(W, x[index]).detach()
    want = float((torch.nn.functional.cross_entropy(logits, y[index], reduction="none") @ weights) / weights.sum())
    assert got["loss"] == pytest.approx(want, rel=1e-12)
    assert got["accuracy"] == pytest.approx(float((logits.argmax(1) == y[index]).double() @ weights / weights.sum()))


def test_grouped_convnets_are_recognised_by_structure():
    assert all(grouped_convnet(build_model(name, (3, 28, 28), 10)) for name in ("alexnet", "cnn_tiny", "cnn_defedavg"))
    assert not grouped_convnet(build_model("mlp", (1, 8, 8), 10))  # no convolution: the closed form
    conv = dict(in_channels=1, out_channels=2, kernel_size=3)
    head = [nn.Flatten(), nn.Linear(2 * 6 * 6, 3)]
    assert grouped_convnet(nn.Sequential(nn.Conv2d(**conv), nn.ReLU(), *head))
    assert not grouped_convnet(nn.Sequential(nn.Conv2d(**conv), nn.Tanh(), *head))  # an unknown layer
    assert not grouped_convnet(nn.Sequential(nn.Conv2d(**conv, bias=False), *head))
    assert not grouped_convnet(nn.Sequential(nn.Conv2d(**conv, padding_mode="reflect", padding=1), *head))
    assert not grouped_convnet(nn.Sequential(nn.Conv2d(**conv), nn.Flatten(), nn.Linear(72, 3), nn.Tanh()))

    class Residual(nn.Sequential):  # same layers, another forward
        def forward(self, x):
            return super().forward(x) + 1

    assert not grouped_convnet(Residual(nn.Conv2d(**conv), *head))


def test_other_conv_nets_fall_back_to_vmap_and_equal_the_loop():
    problem = make_problem("cnn_tiny")
    torch.manual_seed(0)
    problem.model = nn.Sequential(nn.Conv2d(1, 3, 3), nn.Tanh(), nn.Flatten(), nn.Linear(3 * 6 * 6, 10)).double()
    problem.W0 = FlatModel(problem.model).flatten()
    assert not grouped_convnet(problem.model)
    out = {}
    for backend in BACKENDS:
        trainer = problem.trainer("sgdm", lr=0.1, backend=backend)
        out[backend] = trainer.run(problem.W0, trainer.draw(make_streams("fallback"), 0, torch.tensor([1, 4, 9])))
    assert (out["loop"] - problem.W0).abs().max() > 1e-3
    torch.testing.assert_close(out["vectorized"], out["loop"], rtol=1e-10, atol=1e-12)


def test_models_vectorized_on_the_cpu_have_a_batched_path():
    """`auto` sends these to the vectorized backend on a CPU: each must take the closed form or the
    grouped conv path, not vmap (slower than the loop for conv nets on a CPU)."""
    assert VECTORIZED_ON_CPU <= set(MODELS)
    for name in VECTORIZED_ON_CPU:  # (image models: the sequence model `lstm` takes (T, D) inputs)
        module = build_model(name, (3, 28, 28), 10)
        assert (name in VECTORIZED_ON_CPU) <= (plain_mlp(module) is not None or grouped_convnet(module)), name


@pytest.mark.parametrize(
    "model, backend, device, expected",
    [("cnn_tiny", "auto", "cpu", "vectorized"), ("mlp", "auto", "cpu", "vectorized"),
     ("cnn_defedavg", "auto", "cpu", "loop"), ("cnn_defedavg", "auto", "cuda:0", "vectorized"),
     ("cnn_tiny", "loop", "cpu", "loop"), ("cnn_defedavg", "vectorized", "cpu", "vectorized")],
)
def test_auto_backend(model, backend, device, expected):
    assert client_backend(backend, model, device) == expected


@pytest.mark.parametrize("model", sorted(CONV_SHAPES))
@pytest.mark.parametrize("batch", [6, 7, 1])
def test_one_models_gradient_through_replicated_clients_equals_autograd_of_the_module(model, batch):
    """A single client (centralized SGD) takes the grouped path as copies of itself over parts of its batch."""
    from fedrepro.nn.gradients import client_grad, stacked_grad
    from fedrepro.nn.losses import CROSS_ENTROPY

    torch.manual_seed(0)
    flat = FlatModel(build_model(model, CONV_SHAPES[model], 10).double())
    W = flat.flatten()
    x = torch.randn(1, batch, *CONV_SHAPES[model], dtype=torch.float64)
    y = torch.randint(0, 10, (1, batch))
    g = torch.empty_like(W)
    stacked_grad(flat, CROSS_ENTROPY)(W.clone(), g, x, y, ())
    torch.testing.assert_close(g, client_grad(flat, CROSS_ENTROPY, W, x[0], y[0]), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("model", sorted(CONV_SHAPES))
def test_the_grouped_path_and_vmap_give_the_same_gradients(model, monkeypatch):
    """GROUPED_DEVICES picks the path per device type (the grouped one where measured faster, vmap elsewhere, e.g.
    CUDA until measured): both must compute every client's own gradient."""
    from fedrepro.nn import gradients
    from fedrepro.nn.losses import CROSS_ENTROPY

    torch.manual_seed(0)
    flat = FlatModel(build_model(model, CONV_SHAPES[model], 10).double())
    D, B = 3, 5
    W = flat.flatten() + 0.01 * torch.randn(D, flat.n_params, dtype=torch.float64)
    x = torch.randn(D, B, *CONV_SHAPES[model], dtype=torch.float64)
    y = torch.randint(0, 10, (D, B))
    grads = {}
    for devices in ({"cpu"}, set()):
        monkeypatch.setattr(gradients, "GROUPED_DEVICES", devices)
        g = torch.empty(D * flat.n_params, dtype=torch.float64)
        gradients.stacked_grad(flat, CROSS_ENTROPY)(flat.stack(W, D), g, x, y, ())
        grads["grouped" if devices else "vmap"] = flat.clients(g, D)  # (the stack is parameter-major)
    own = torch.stack([gradients.client_grad(flat, CROSS_ENTROPY, W[d], x[d], y[d]) for d in range(D)])
    assert grads["grouped"].abs().max() > 0
    torch.testing.assert_close(grads["grouped"], own, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(grads["vmap"], own, rtol=1e-10, atol=1e-12)
