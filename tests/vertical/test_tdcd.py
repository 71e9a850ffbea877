"""TDCD (algorithms/tdcd.py over nn/silos.py) against what it must reduce to (paper §3, Remarks 3-4):
one centralized SGD step (Q = 1, equal per-client counts), FedAvg (N = 1), single-tier vertical FL with
local steps (K = 1), stale other-silo embeddings within a round, and the loop backend (the reference)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.func import functional_call

from fedrepro.algorithms.tdcd import TDCD
from fedrepro.data.vertical import split_features
from fedrepro.models import seeded_model
from fedrepro.nn import DeviceData, LocalOptimizer, LocalTrainer
from fedrepro.nn.silos import FusedLoss, StateLayout, make_silo, sample_losses

M = 48
# name -> (full input shape per sample, output dim, model options)
MODELS = {"cnn_s2": ((3, 8, 8), 10, {}), "lstm": ((5, 9), 1, {"hidden": 4}), "mlp": ((2, 3, 4), 10, {"hidden": 8})}


def problem(model: str, N: int, seed: int = 0):
    """Float64 data (M samples), its N feature blocks, labels and each silo's initial module."""
    shape, out, options = MODELS[model]
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(M, *shape, generator=gen, dtype=torch.float64)
    y = torch.randint(0, max(out, 2), (M,), generator=gen)
    blocks = [torch.from_numpy(np.ascontiguousarray(b)) for b in split_features(x.numpy(), N, -1)]
    modules = [seeded_model(model, tuple(b.shape[1:]), out, "test", j, **options).double()
               for j, b in enumerate(blocks)]
    return x, y, blocks, modules


class Stepped:
    """TDCD and its state, stepped as the engine steps it."""

    def __init__(self, alg: TDCD) -> None:
        self.alg, self.silos, self.state = alg, alg.silos, alg.init()

    def iterate(self, t: int) -> None:
        self.state, _ = self.alg.round(self.state, t)

    def model(self) -> list[torch.Tensor]:
        return self.alg.model(self.state)

    @property
    def hubs(self) -> list[torch.Tensor]:
        return self.state["hubs"]


def tdcd(backend: str, blocks, y, modules, owners, K: int, Q: int, lr: float, batches) -> Stepped:
    layouts = [StateLayout(m) for m in modules]
    silos = [make_silo(backend, lay, x, y, owner, K, lr) for lay, x, owner in zip(layouts, blocks, owners)]
    return Stepped(TDCD(silos, [lay.flatten() for lay in layouts], Q, lambda r: batches[r]))


def random_batches(n: int, B: int, seed: int = 1) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randperm(M, generator=gen)[:B] for _ in range(n)]


def run(alg: Stepped, iterations: int) -> list[torch.Tensor]:
    for t in range(iterations):
        alg.iterate(t)
    return alg.model()


@pytest.mark.parametrize("backend", ["loop", "vectorized"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_q1_with_equal_counts_is_centralized_sgd_on_the_concatenated_features(model, backend):
    N, K, lr = 3 if model == "lstm" else 2, 4, 0.3
    x, y, blocks, modules = problem(model, N)
    # each client holds 3 IDs of every batch; the assignment differs per silo (routed by ID)
    owners = [torch.arange(M).add(j) % K for j in range(N)]
    batches = [torch.arange(12) + 12 * r for r in range(3)]
    alg = tdcd(backend, blocks, y, modules, owners, K, 1, lr, batches)
    # the centralized model: all blocks' parameters, prediction sum_j h_j(x_j), mean loss over the batch
    params = [{n: p.detach().clone().requires_grad_() for n, p in m.named_parameters()} for m in modules]
    for r, batch in enumerate(batches):
        alg.iterate(r)
        logits = sum(functional_call(m, p, (b[batch],)) for m, p, b in zip(modules, params, blocks))
        loss = sample_losses(logits, y[batch]).mean()
        grads = torch.autograd.grad(loss, [t for p in params for t in p.values()])
        with torch.no_grad():
            for t, g in zip([t for p in params for t in p.values()], grads):
                t -= lr * g
        for j, state in enumerate(alg.model()):
            central = torch.cat([t.detach().reshape(-1) for t in params[j].values()])
            assert (state - central).abs().max() < 1e-10
    assert (alg.model()[0] - StateLayout(modules[0]).flatten()).abs().max() > 1e-3  # it moved


@pytest.mark.parametrize("backend", ["loop", "vectorized"])
def test_one_silo_is_fedavg(backend):
    """N = 1: no other silo, so each client runs Q SGD steps of its own loss on its IDs of the batch from
    the hub, and the hub averages: FedAvg with every client active, as the client layer's LocalTrainer
    trains them (fixed minibatch per round: the client's IDs in the shared batch)."""
    K, Q, lr = 4, 3, 0.2
    _, y, blocks, modules = problem("cnn_s2", 1)
    owner = torch.arange(M) % K
    batches = [torch.arange(24).roll(3 * r) for r in range(3)]  # IDs 0..23 shifted: 6 per client each round
    alg = tdcd(backend, blocks, y, modules, [owner], K, Q, lr, batches)
    final = run(alg, 3 * Q)[0]
    flat_trainer = LocalTrainer(modules[0], DeviceData(blocks[0], y, torch.arange(M).view(K, -1)),
                                LocalOptimizer("sgd", lr), Q, 6, "loop")
    W = StateLayout(modules[0]).flatten()
    for batch in batches:
        per_client = torch.stack([batch[owner[batch] == k] for k in range(K)])  # (K, 6) IDs
        finals = flat_trainer.run(W, per_client[:, None, :].expand(K, Q, 6))
        W = finals.mean(0)
    assert (final - W).abs().max() < 1e-10


@pytest.mark.parametrize("backend", ["loop", "vectorized"])
@pytest.mark.parametrize("model", ["cnn_s2", "lstm"])
def test_one_client_per_silo_is_vertical_fl_with_local_steps(model, backend):
    """K = 1: each silo takes Q local steps against the other silos' embeddings of the round's start."""
    N, Q, lr = 3, 4, 0.2
    _, y, blocks, modules = problem(model, N)
    batches = random_batches(3, 16)
    alg = tdcd(backend, blocks, y, modules, [torch.zeros(M, dtype=torch.long)] * N, 1, Q, lr, batches)
    final = run(alg, 3 * Q - 2)  # ends within the third round: that round's clients
    params = [{n: p.detach().clone() for n, p in m.named_parameters()} for m in modules]
    for r, batch in enumerate(batches):
        with torch.no_grad():
            phis = [functional_call(m, p, (b[batch],)) for m, p, b in zip(modules, params, blocks)]
        for j, (m, b) in enumerate(zip(modules, blocks)):
            others = sum(phi for l, phi in enumerate(phis) if l != j)
            for _ in range(Q if r < 2 else Q - 2):
                leaves = {n: t.requires_grad_() for n, t in params[j].items()}
                loss = sample_losses(functional_call(m, leaves, (b[batch],)) + others, y[batch]).mean()
                grads = torch.autograd.grad(loss, list(leaves.values()))
                params[j] = {n: (t - lr * g).detach() for (n, t), g in zip(leaves.items(), grads)}
    for j in range(N):
        assert (final[j] - torch.cat([t.reshape(-1) for t in params[j].values()])).abs().max() < 1e-10


@pytest.mark.parametrize("backend", ["loop", "vectorized"])
def test_other_silos_embeddings_are_stale_within_a_round(backend):
    """Changing silo 1's hub and clients within a round leaves silo 0's clients' steps unchanged until the
    next exchange, which does see the change."""
    N, K, Q = 2, 3, 3
    _, y, blocks, modules = problem("cnn_s2", N)
    owners = [torch.arange(M) % K] * N
    batches = random_batches(2, 18)
    runs = [tdcd(backend, blocks, y, modules, owners, K, Q, 0.2, batches) for _ in range(2)]
    for alg in runs:
        alg.iterate(0)
    state = runs[1].state  # perturb silo 1 of the second run: its hub and its clients' current states
    runs[1].state = {**state, "hubs": [state["hubs"][0], state["hubs"][1] + 0.5],
                     "clients": [state["clients"][0], state["clients"][1] + 0.5]}
    for alg in runs:
        for t in (1, 2):
            alg.iterate(t)
    assert torch.equal(runs[0].hubs[0], runs[1].hubs[0])  # silo 0 never saw it within the round
    for alg in runs:
        alg.iterate(3)  # next round: the exchange carries silo 1's change to silo 0
    assert (runs[0].model()[0] - runs[1].model()[0]).abs().max() > 1e-6


@pytest.mark.parametrize("model", sorted(MODELS))
def test_vectorized_equals_loop(model):
    """Several rounds, Q > 1, uneven client counts, a client that never holds an ID, per-silo assignment."""
    N, K, Q = 2, 4, 3
    _, y, blocks, modules = problem(model, N)
    rng = np.random.default_rng(3)
    owners = [torch.from_numpy(rng.choice(3, size=M, p=[0.6, 0.3, 0.1])) for _ in range(N)]  # client 3 empty
    batches = random_batches(4, 20)
    finals = {b: run(tdcd(b, blocks, y, modules, owners, K, Q, 0.3, batches), 4 * Q - 1)
              for b in ("loop", "vectorized")}
    for loop, vec, module in zip(finals["loop"], finals["vectorized"], modules):
        assert (loop - StateLayout(module).flatten()).abs().max() > 1e-3
        torch.testing.assert_close(vec, loop, rtol=1e-10, atol=1e-12)


def test_an_empty_client_keeps_the_hub_and_counts_in_the_average():
    K, lr = 2, 0.5
    _, y, blocks, modules = problem("mlp", 1)
    owner = torch.zeros(M, dtype=torch.long)  # client 1 holds nothing
    for backend in ("loop", "vectorized"):
        alg = tdcd(backend, blocks, y, modules, [owner], K, 2, lr, random_batches(1, 10))
        hub = alg.hubs[0].clone()
        alg.iterate(0)
        clients = alg.silos[0].clients()
        assert torch.equal(clients[1], hub) and not torch.equal(clients[0], hub)
        assert torch.allclose(alg.model()[0], (clients[0] + hub) / 2)


def test_batchnorm_clients_keep_their_own_running_statistics_and_the_hub_averages_them():
    K = 2
    x = torch.randn(8, 3, 16, 16, dtype=torch.float64)
    module = seeded_model("resnet18_cifar", (3, 16, 16), 10, "bn").double()
    layout = StateLayout(module)
    assert layout.has_buffers and layout.size > layout.n_params
    y = torch.randint(0, 10, (8,))
    for backend in ("loop", "vectorized"):
        alg = Stepped(TDCD([make_silo(backend, layout, x, y, torch.arange(8) % K, K, 0.1)], [layout.flatten()], 2,
                           lambda r: torch.arange(8)))
        alg.iterate(0)
        stats = alg.silos[0].clients()[:, layout.n_params:]
        assert not torch.equal(stats[0], stats[1])  # each client's own batch statistics
        alg.iterate(1)  # the round's end: the hub is the mean of the clients' whole states, statistics included
        assert torch.equal(alg.hubs[0], alg.silos[0].clients().mean(0))
        assert not torch.equal(alg.hubs[0][layout.n_params:], layout.flatten()[layout.n_params:])


def _batchnorm_net(shape: tuple[int, ...], out: int, seed: int) -> torch.nn.Module:
    """Conv-BN-ReLU twice, then a linear head: BatchNorm after convolutions of two widths."""
    torch.manual_seed(seed)
    c, h, w = shape
    return torch.nn.Sequential(
        torch.nn.Conv2d(c, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
        torch.nn.Conv2d(4, 6, 3, stride=2, padding=1, bias=False), torch.nn.BatchNorm2d(6), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(6 * ((h + 1) // 2) * ((w + 1) // 2), out)).double()


@pytest.mark.parametrize("model", ["conv_bn", pytest.param("resnet18_cifar", marks=pytest.mark.slow)])
def test_vectorized_batchnorm_clients_equal_the_loop(model):
    """nn/batchnorm_silo.py against the loop: several rounds, Q > 1, uneven client counts and a client that never
    holds an ID (its statistics stay the hub's), each client's own running statistics, per-silo assignment. The
    paper's ResNet-18 (shortcuts with BatchNorm) takes ~1-2 min here in float64, so it runs fewer rounds."""
    N, K = 2, 4
    Q, rounds = (2, 2) if model == "resnet18_cifar" else (3, 3)
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(M, 3, 16, 32 if model == "resnet18_cifar" else 10, generator=gen, dtype=torch.float64)
    y = torch.randint(0, 10, (M,), generator=gen)
    blocks = [torch.from_numpy(np.ascontiguousarray(b)) for b in split_features(x.numpy(), N, -1)]
    shape = tuple(blocks[0].shape[1:])
    if model == "conv_bn":
        modules = [_batchnorm_net(shape, 10, j) for j in range(N)]
    else:
        modules = [seeded_model(model, shape, 10, "bn", j).double() for j in range(N)]
    rng = np.random.default_rng(3)
    owners = [torch.from_numpy(rng.choice(3, size=M, p=[0.6, 0.3, 0.1])) for _ in range(N)]  # client 3 empty
    batches = random_batches(rounds, 20)
    finals = {}
    for backend in ("loop", "vectorized"):
        alg = tdcd(backend, blocks, y, modules, owners, K, Q, 0.1, batches)
        for t in range(rounds * Q - 1):  # ends within the last round: its clients, not only the hubs
            alg.iterate(t)
        finals[backend] = [s.clients().clone() for s in alg.silos], alg.model()
    P = StateLayout(modules[0]).n_params
    for loop, vec, module in zip(finals["loop"][0], finals["vectorized"][0], modules):
        start = StateLayout(module).flatten()
        assert (loop[0, :P] - start[:P]).abs().max() > 1e-3 and (loop[0, P:] - start[P:]).abs().max() > 1e-3
        torch.testing.assert_close(vec, loop, rtol=1e-9, atol=1e-11)
    for loop, vec in zip(finals["loop"][1], finals["vectorized"][1]):
        torch.testing.assert_close(vec, loop, rtol=1e-9, atol=1e-11)


def test_the_injected_loss_is_the_masked_mean():
    out = torch.randn(2, 5, 3, dtype=torch.float64)
    y, phi = torch.randint(0, 3, (2, 5)), torch.randn(2, 5, 3, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 0, 0, 0], [0, 0, 0, 0, 0]], dtype=torch.float64)
    weight = mask * 5 / mask.sum(1, keepdim=True).clamp(min=1)
    value = FusedLoss().value(out, y, phi, weight)
    expected = -(out + phi)[0, :2].log_softmax(-1).gather(-1, y[0, :2, None]).mean()
    assert value[0].item() == pytest.approx(expected.item()) and value[1].item() == 0.0


@pytest.mark.parametrize("backend", ["loop", "vectorized"])
def test_a_round_leaves_its_state_alone_and_any_state_resumes_exactly(backend):
    """Within a TDCD round the silos step on in place; the states a round returns are snapshots, and a
    round given an earlier state (a checkpoint's) loads it into the silos first."""
    N, K, Q = 2, 3, 3
    _, y, blocks, modules = problem("mlp", N)
    owners = [torch.arange(M) % K] * N
    batches = random_batches(2, 18)
    straight = tdcd(backend, blocks, y, modules, owners, K, Q, 0.2, batches)
    straight.iterate(0)
    saved = straight.state
    copies = [c.clone() for c in saved["clients"]]
    for t in range(1, 5):
        straight.iterate(t)
    assert all(torch.equal(c, k) for c, k in zip(saved["clients"], copies))
    again = tdcd(backend, blocks, y, modules, owners, K, Q, 0.2, batches)
    again.iterate(0)
    again.iterate(1)  # the silos now hold a later state than the one given next
    again.state = saved
    for t in range(1, 5):
        again.iterate(t)
    for a, b in zip(straight.model(), again.model()):
        assert torch.equal(a, b)


def test_a_batchnorm_client_without_samples_stays_finite_and_unchanged_in_float32():
    """Thirty BatchNorm layers: a client with no ID in the batch must not be normalized by 1/sqrt(eps) at each
    (inf in float32 long before the last, and a NaN gradient times its zero loss weight)."""
    torch.manual_seed(0)
    layers = [torch.nn.Conv2d(3, 4, 3, padding=1)]
    for _ in range(30):
        layers += [torch.nn.BatchNorm2d(4), torch.nn.ReLU()]
    module = torch.nn.Sequential(*layers, torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 10))
    layout = StateLayout(module)
    x, y = torch.randn(8, 3, 4, 4), torch.randint(0, 10, (8,))
    silo = make_silo("vectorized", layout, x, y, torch.zeros(8, dtype=torch.long), 2, 0.1)  # client 1: no ID
    hub = layout.flatten()
    silo.start_round(hub, torch.arange(8))
    silo.set_others(torch.zeros(8, 10) + silo.exchange() * 0)
    silo.step()
    states = silo.clients()
    assert torch.isfinite(states).all() and torch.equal(states[1], hub) and not torch.equal(states[0], hub)
