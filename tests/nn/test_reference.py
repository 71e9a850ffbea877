"""The engine against independent references: torch.optim on an nn.Module, gradient descent on the
global loss, and a hand-written FedAvg round."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from fedrepro.algorithms.fedcluster import FedAvg, FedCluster
from fedrepro.nn import BACKENDS, CROSS_ENTROPY, DeviceData, FlatModel, LocalOptimizer, LocalTrainer
from fedrepro.nn.gradients import client_grad, stacked_grad

from nn_testdata import N_DEVICES, make_streams


def torch_optim_reference(model, data: DeviceData, idx: torch.Tensor, opt: LocalOptimizer) -> torch.Tensor:
    """One client (idx (E, B)) trained with torch.optim on a copy of the module."""
    module = copy.deepcopy(model)
    start = [p.detach().clone() for p in module.parameters()]
    if opt.name == "adam":
        optim = torch.optim.Adam(module.parameters(), lr=opt.lr, betas=opt.betas, eps=opt.eps)
    else:
        optim = torch.optim.SGD(module.parameters(), lr=opt.lr, momentum=opt.momentum if opt.name == "sgdm" else 0.0)
    for b in idx:
        optim.zero_grad()
        loss = F.cross_entropy(module(data.images[b]), data.labels[b])
        if opt.name == "fedprox":
            loss = loss + opt.mu / 2 * sum(((p - s) ** 2).sum() for p, s in zip(module.parameters(), start))
        loss.backward()
        optim.step()
    return FlatModel(module).flatten()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("opt", ["sgd", "sgdm", "adam", "fedprox"])
def test_local_optimizer_matches_torch_optim(problem, opt, backend):
    optimizer = LocalOptimizer(opt, 0.01 if opt == "adam" else 0.1)
    trainer = LocalTrainer(problem.model, problem.data, optimizer, steps=5, batch=4, backend=backend)
    idx = trainer.draw(make_streams("optim"), 0, torch.tensor([3]))
    got = trainer.run(problem.W0, idx)[0]
    torch.testing.assert_close(got, torch_optim_reference(problem.model, problem.data, idx[0], optimizer),
                               rtol=1e-10, atol=1e-12)


def test_stacked_gradient_matches_per_client_autograd(problem):
    D, B = 3, 5
    gen = torch.Generator().manual_seed(3)
    stack = torch.stack([problem.W0 + 0.1 * torch.randn(problem.W0.shape, generator=gen, dtype=problem.W0.dtype)
                         for _ in range(D)])
    idx = torch.randint(0, len(problem.data.labels), (D, B), generator=gen)
    x, y = problem.data.images[idx], problem.data.labels[idx]
    flat = problem.flat
    w = torch.cat([p.reshape(-1) for p in torch.split(stack, flat.numels, dim=1)])  # parameter-major stack
    g = torch.full_like(w, float("nan"))
    stacked_grad(flat, CROSS_ENTROPY)(w, g, x, y, ())
    got = flat.clients(g, D)
    want = torch.stack([client_grad(flat, CROSS_ENTROPY, stack[d], x[d], y[d]) for d in range(D)])
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fedavg_one_full_batch_step_with_everyone_is_gradient_descent(problem, backend):
    """E = 1, B = all local samples, all devices: mean_k (W - lr grad f_k(W)) = W - lr grad f(W)."""
    lr = 0.3
    trainer = problem.trainer("sgd", lr=lr, steps=1, batch=problem.data.samples_per_device, backend=backend)
    W1, info = FedAvg(trainer, make_streams("gd"), frac=1.0).round(problem.W0, 0)
    assert info["clients"] == N_DEVICES
    slots = problem.data.table.flatten()  # the pooled objective (P): every device slot once
    images, labels = problem.data.images[slots], problem.data.labels[slots]
    pooled_grad = client_grad(problem.flat, CROSS_ENTROPY, problem.W0, images, labels)
    torch.testing.assert_close(W1, problem.W0 - lr * pooled_grad, rtol=1e-10, atol=1e-12)


def reference_fedavg_round(model, data: DeviceData, W, rnd, streams, frac, steps, batch, lr):
    """FedAvg written out with nn.Module + torch.optim.SGD, on the engine's stream keys."""
    n = data.n_devices
    active = torch.randperm(n, generator=streams("activate", rnd, 0))[: round(frac * n)]
    finals = []
    for k in active.tolist():
        module = copy.deepcopy(model)
        torch.nn.utils.vector_to_parameters(W.clone(), module.parameters())  # else SGD writes into W
        optim = torch.optim.SGD(module.parameters(), lr=lr)
        local = torch.rand(steps, data.samples_per_device, generator=streams("batches", rnd, k)).argsort(-1)[:, :batch]
        for b in data.table[k][local]:
            optim.zero_grad()
            F.cross_entropy(module(data.images[b]), data.labels[b]).backward()
            optim.step()
        finals.append(torch.nn.utils.parameters_to_vector(module.parameters()).detach())
    return torch.stack(finals).mean(0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fedcluster_with_one_cluster_is_fedavg(problem, backend):
    streams = make_streams("M=1")
    trainer = problem.trainer("sgd", lr=0.1, backend=backend)
    fedavg = FedAvg(trainer, streams, frac=0.25)
    fedcluster = FedCluster(trainer, torch.arange(N_DEVICES).unsqueeze(0), streams, frac=0.25)
    W_avg = W_fc = W_ref = problem.W0
    for r in range(2):
        W_avg, info_avg = fedavg.round(W_avg, r)
        W_fc, info_fc = fedcluster.round(W_fc, r)
        W_ref = reference_fedavg_round(problem.model, problem.data, W_ref, r, streams, 0.25, 3, 4, 0.1)
    assert torch.equal(W_fc, W_avg) and info_fc == info_avg
    torch.testing.assert_close(W_avg, W_ref, rtol=1e-10, atol=1e-12)
