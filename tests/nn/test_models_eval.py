"""The papers' models and the evaluation helpers."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from fedrepro.nn import FlatModel, evaluate, pooled_train_set
from fedrepro.models import build_model

from nn_testdata import make_problem


@pytest.mark.parametrize(
    "name, shape, n_params",
    [
        ("alexnet", (3, 28, 28), 1_387_786),  # [42]'s count (docs/papers/fedcluster.md R1)
        ("alexnet", (1, 28, 28), 1_384_586),
        ("alexnet", (3, 32, 32), 1_756_426),  # uncropped CIFAR
        ("mlp", (1, 14, 14), 196 * 64 + 64 + 64 * 10 + 10),
        ("mlp", (3, 14, 14), 588 * 64 + 64 + 64 * 10 + 10),
        ("mlp2", (1, 28, 28), 784 * 200 + 200 + 200 * 200 + 200 + 200 * 10 + 10),
    ],
)
def test_model_sizes(name, shape, n_params):
    model = build_model(name, shape, 10)
    assert sum(p.numel() for p in model.parameters()) == n_params
    assert model(torch.zeros(2, *shape)).shape == (2, 10)


def test_mlp_is_the_one_hidden_layer_module_it_always_was():
    """Same modules, same parameter order: a seeded init (W0) does not change."""
    torch.manual_seed(5)
    got = FlatModel(build_model("mlp", (1, 6, 6), 10)).flatten()
    torch.manual_seed(5)
    want = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(36, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    assert torch.equal(got, FlatModel(want).flatten())


def test_unknown_model():
    with pytest.raises(ValueError, match="unknown model"):
        build_model("resnet", (1, 28, 28), 10)


def test_flat_model_round_trips():
    flat = FlatModel(build_model("cnn_tiny", (1, 8, 8), 10))
    W = flat.flatten()
    assert torch.equal(torch.cat([v.reshape(-1) for v in flat.unflatten(W).values()]), W)
    stack = flat.stack(W, 3)
    assert torch.equal(flat.clients(stack, 3), W.expand(3, -1))
    assert all(v.is_contiguous() and v.shape[0] == 3 for v in flat.unstack(stack, 3).values())


def test_evaluate_weights_the_pooled_multiset():
    problem = make_problem("mlp")
    data, flat, W = problem.data, problem.flat, problem.W0
    index, counts = pooled_train_set(data.table)
    assert counts.sum() == data.table.numel() and len(index) == len(set(data.table.flatten().tolist()))
    got = evaluate(flat, W, data.images, data.labels, index, counts, batch_size=7)
    slots = data.table.flatten()
    logits = flat.forward(W, data.images[slots]).detach()
    assert got["loss"] == pytest.approx(float(F.cross_entropy(logits, data.labels[slots])), rel=1e-12)
    assert got["accuracy"] == pytest.approx(float((logits.argmax(1) == data.labels[slots]).double().mean()), rel=1e-12)


def test_pooled_subsample_is_fixed_by_its_generator():
    table = make_problem("mlp").data.table
    a = pooled_train_set(table, subsample=50, gen=torch.Generator().manual_seed(1))
    b = pooled_train_set(table, subsample=50, gen=torch.Generator().manual_seed(1))
    assert all(torch.equal(x, y) for x, y in zip(a, b)) and a[1].sum() == 50


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA device"))])
def test_an_evaluation_on_a_side_stream_reads_the_model_as_it_was_at_launch(device):
    """SideStream: the same floats as evaluate, of W's value when launched, though the current stream then changes W
    in place and goes on with other work (on the CPU the work runs at once)."""
    from fedrepro.nn.evaluate import SideStream, evaluate_on_device

    problem = make_problem("cnn_tiny")
    flat = FlatModel(problem.model.to(device))
    W, images, labels = problem.W0.to(device), problem.data.images.to(device), problem.data.labels.to(device)
    expected = evaluate(flat, W, images, labels, batch_size=16)
    read = SideStream(W.device).launch(lambda w: evaluate_on_device(flat, w, images, labels, batch_size=16), W)
    W.mul_(0.5)
    ones = torch.ones(512, 512, device=device, dtype=W.dtype)
    for _ in range(20):  # the current stream busy meanwhile
        ones @ ones
    assert read() == expected != evaluate(flat, W, images, labels, batch_size=16)
