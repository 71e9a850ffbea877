"""What the next engines need from the client layer: clients from their own starts, an injected loss
with per-sample inputs, closed-form gradients for plain MLPs of any depth, and buffers reused across
runs without leaking state."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from fedrepro.models import MLP, build_model
from fedrepro.nn import BACKENDS, CROSS_ENTROPY, OPTIMIZERS, FlatModel, LocalOptimizer, LocalTrainer, Loss, evaluate
from fedrepro.nn.gradients import client_grad, fused_sgd, plain_mlp, stacked_grad

from nn_testdata import make_problem, make_streams

CLIENTS = torch.tensor([2, 7, 11, 19])


def lr_of(opt: str) -> float:
    return 0.01 if opt == "adam" else 0.1


def starts(problem, D: int, seed: int = 1) -> torch.Tensor:
    """D different starting points near W0, (D, P)."""
    gen = torch.Generator().manual_seed(seed)
    return problem.W0 + 0.1 * torch.randn(D, len(problem.W0), generator=gen, dtype=problem.W0.dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("opt", OPTIMIZERS)
def test_clients_from_their_own_starts_train_as_if_alone(problem, opt, backend):
    trainer = problem.trainer(opt, lr=lr_of(opt), backend=backend)
    idx = trainer.draw(make_streams("starts"), 0, CLIENTS)
    W = starts(problem, len(CLIENTS))
    together = trainer.run(W, idx)
    for d in range(len(CLIENTS)):
        torch.testing.assert_close(together[d], trainer.run(W[d], idx[d : d + 1])[0], rtol=1e-12, atol=1e-14)
    assert not torch.allclose(together[0], trainer.run(W[1], idx[:1])[0])  # the start matters


@pytest.mark.parametrize("opt", OPTIMIZERS)
def test_stacked_starts_vectorized_equals_loop(problem, opt):
    W = starts(problem, len(CLIENTS))
    out = {}
    for backend in BACKENDS:
        trainer = problem.trainer(opt, lr=lr_of(opt), backend=backend)
        out[backend] = trainer.run(W, trainer.draw(make_streams("stacked"), 0, CLIENTS))
    torch.testing.assert_close(out["vectorized"], out["loop"], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fedprox_anchor_is_each_clients_own_start(problem, backend):
    """Against torch.optim.SGD on f + mu/2 ||w - start_d||^2, written out per client."""
    opt = LocalOptimizer("fedprox", 0.1, mu=0.5)
    trainer = LocalTrainer(problem.model, problem.data, opt, 3, 4, backend)
    idx = trainer.draw(make_streams("prox"), 0, CLIENTS)
    W = starts(problem, len(CLIENTS))
    got = trainer.run(W, idx)
    for d in range(len(CLIENTS)):
        module = copy.deepcopy(problem.model)
        nn.utils.vector_to_parameters(W[d].clone(), module.parameters())
        start = FlatModel(module).unflatten(W[d]).values()
        sgd = torch.optim.SGD(module.parameters(), lr=opt.lr)
        for b in idx[d]:
            sgd.zero_grad()
            prox = sum(((p - s) ** 2).sum() for p, s in zip(module.parameters(), start))
            (F.cross_entropy(module(problem.data.images[b]), problem.data.labels[b]) + opt.mu / 2 * prox).backward()
            sgd.step()
        torch.testing.assert_close(got[d], nn.utils.parameters_to_vector(module.parameters()).detach(),
                                   rtol=1e-10, atol=1e-12)


class ShiftedWeightedCE(Loss):
    """TDCD-like: CE(out + shift, y) per sample, times a per-sample weight (e.g. a scaled mask)."""

    def samples(self, out, y, shift, weight):
        return weight * -(out + shift).log_softmax(-1).gather(-1, y.unsqueeze(-1)).squeeze(-1)

    def predictions(self, out, shift, weight):
        return (out + shift).argmax(-1)


class ClosedShiftedWeightedCE(ShiftedWeightedCE):
    def output_grad(self, out, y, shift, weight):
        g = (out + shift).softmax(-1)
        g.scatter_add_(-1, y.unsqueeze(-1), g.new_full((*y.shape, 1), -1.0))
        return g * (weight / y.shape[-1]).unsqueeze(-1)


def extra_inputs(idx: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(4)
    shift = torch.randn(*idx.shape, 10, generator=gen, dtype=dtype)
    weight = torch.rand(*idx.shape, generator=gen, dtype=dtype) * 2
    return shift, weight


@pytest.mark.parametrize("loss", [ShiftedWeightedCE(), ClosedShiftedWeightedCE()], ids=["autograd", "closed"])
@pytest.mark.parametrize("opt", ["sgd", "sgdm"])  # fused SGD step and gradient stack + optimizer
def test_injected_loss_with_extra_inputs(problem, loss, opt):
    out = {}
    for backend in BACKENDS:
        trainer = LocalTrainer(problem.model, problem.data, LocalOptimizer(opt, 0.1), 3, 4, backend, loss=loss)
        idx = trainer.draw(make_streams("loss"), 0, CLIENTS)
        shift, weight = extra_inputs(idx, problem.W0.dtype)
        out[backend] = trainer.run(problem.W0, idx, (shift, weight))
    torch.testing.assert_close(out["vectorized"], out["loop"], rtol=1e-10, atol=1e-12)
    # the plain formula, with torch.optim on the module
    for d in range(len(CLIENTS)):
        module = copy.deepcopy(problem.model)
        optim = torch.optim.SGD(module.parameters(), lr=0.1, momentum=0.5 if opt == "sgdm" else 0.0)
        for t, b in enumerate(idx[d]):
            optim.zero_grad()
            ce = F.cross_entropy(module(problem.data.images[b]) + shift[d, t], problem.data.labels[b], reduction="none")
            (weight[d, t] * ce).mean().backward()
            optim.step()
        torch.testing.assert_close(out["loop"][d], FlatModel(module).flatten(), rtol=1e-10, atol=1e-12)
    cross_entropy = problem.trainer(opt, lr=0.1).run(problem.W0, idx)
    assert not torch.allclose(cross_entropy, out["loop"])  # the extra inputs matter


def test_extra_inputs_may_be_fixed_over_the_steps():
    """An expanded (D, 1, B, ...) -> (D, E, B, ...) view, as TDCD's stale embeddings over Q steps."""
    problem = make_problem("mlp")
    trainer = LocalTrainer(problem.model, problem.data, LocalOptimizer("sgd", 0.1), 3, 4, "vectorized",
                           loss=ClosedShiftedWeightedCE())
    idx = trainer.draw(make_streams("fixed"), 0, CLIENTS)
    shift, weight = (e[:, :1] for e in extra_inputs(idx, problem.W0.dtype))
    expanded = trainer.run(problem.W0, idx, (shift.expand(-1, 3, -1, -1), weight.expand(-1, 3, -1)))
    copied = trainer.run(problem.W0, idx, (shift.repeat(1, 3, 1, 1), weight.repeat(1, 3, 1)))
    assert torch.equal(expanded, copied)
    with pytest.raises(ValueError, match="aligned"):
        trainer.run(problem.W0, idx, (shift, weight))


def test_evaluate_with_an_injected_loss():
    problem = make_problem("mlp")
    data, flat, W = problem.data, problem.flat, problem.W0
    gen = torch.Generator().manual_seed(2)
    shift = torch.randn(len(data.labels), 10, generator=gen, dtype=W.dtype)  # aligned with the pool
    weight = torch.rand(len(data.labels), generator=gen, dtype=W.dtype)
    index = torch.tensor([3, 9, 4, 100, 57])
    got = evaluate(flat, W, data.images, data.labels, index, batch_size=2, loss=ShiftedWeightedCE(),
                   extra=(shift, weight))
    logits = flat.forward(W, data.images[index]).detach() + shift[index]
    y = data.labels[index]
    want = (weight[index] * F.cross_entropy(logits, y, reduction="none")).mean()
    assert got["loss"] == pytest.approx(float(want), rel=1e-12)
    assert got["accuracy"] == pytest.approx(float((logits.argmax(1) == y).double().mean()), rel=1e-12)
    plain = evaluate(flat, W, data.images, data.labels, index)
    assert plain["loss"] == pytest.approx(float(F.cross_entropy(logits - shift[index], y)), rel=1e-12)


@pytest.mark.parametrize("hidden", [(5,), (5, 4), (5, 4, 3)], ids=["depth1", "depth2", "depth3"])
def test_closed_form_mlp_gradient_equals_autograd(hidden):
    torch.manual_seed(0)
    flat = FlatModel(MLP((2, 3, 3), 10, hidden=hidden).double())
    assert plain_mlp(flat.module) is True
    D, B = 3, 6
    gen = torch.Generator().manual_seed(1)
    W = flat.flatten() + 0.1 * torch.randn(D, flat.n_params, generator=gen, dtype=torch.float64)
    x = torch.randn(D, B, 2, 3, 3, generator=gen, dtype=torch.float64)
    y = torch.randint(0, 10, (D, B), generator=gen)
    w = flat.stack(W, D)
    g = torch.full_like(w, float("nan"))
    stacked_grad(flat, CROSS_ENTROPY)(w, g, x, y, ())
    want = torch.stack([client_grad(flat, CROSS_ENTROPY, W[d], x[d], y[d]) for d in range(D)])
    torch.testing.assert_close(flat.clients(g, D), want, rtol=1e-10, atol=1e-12)
    fused_sgd(flat, CROSS_ENTROPY, 0.3)(w, x, y, ())  # in place
    torch.testing.assert_close(flat.clients(w, D), W - 0.3 * want, rtol=1e-10, atol=1e-12)


def test_plain_mlps_are_recognised_by_structure():
    assert plain_mlp(build_model("mlp2", (1, 28, 28), 10)) is True
    assert plain_mlp(nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))) is False  # no Flatten
    assert plain_mlp(build_model("cnn_tiny", (1, 8, 8), 10)) is None
    assert plain_mlp(nn.Sequential(nn.Flatten(), nn.Linear(4, 3, bias=False))) is None
    assert plain_mlp(nn.Sequential(nn.Flatten(), nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))) is None
    assert plain_mlp(nn.Sequential(nn.Flatten(), nn.Linear(4, 3), nn.ReLU())) is None


@pytest.mark.parametrize("opt", OPTIMIZERS)
def test_reused_buffers_leak_no_state_between_runs(problem, opt):
    """Runs of different D and starts through one trainer give what a fresh trainer gives."""
    trainer = problem.trainer(opt, lr=lr_of(opt), backend="vectorized")
    streams = make_streams("reuse")
    calls = [(starts(problem, 4, seed=1), CLIENTS), (problem.W0, CLIENTS[:2]),
             (starts(problem, 3, seed=2), CLIENTS[1:])]
    for W, clients in calls + calls:
        idx = trainer.draw(streams, 0, clients)
        fresh = problem.trainer(opt, lr=lr_of(opt), backend="vectorized")
        assert torch.equal(trainer.run(W, idx), fresh.run(W, idx))
    with pytest.raises(ValueError, match="starts"):
        trainer.run(starts(problem, 2), trainer.draw(streams, 0, CLIENTS))


def test_draw_with_one_stream_index_per_client(problem):
    """Asynchronous FL keys a training by (client, its own training count): a client's batches are those
    it would draw alone in a round of that index, whatever the other clients' indices."""
    trainer = problem.trainer("sgd", lr=0.1, backend="vectorized")
    streams = make_streams("keyed")
    keyed = trainer.draw(streams, [3, 0, 3, 8], CLIENTS)
    for d, (client, key) in enumerate(zip(CLIENTS.tolist(), [3, 0, 3, 8])):
        assert torch.equal(keyed[d], trainer.draw(streams, key, torch.tensor([client]))[0])
    assert not torch.equal(keyed[0], trainer.draw(streams, 4, CLIENTS[:1])[0])
    with pytest.raises(ValueError, match="stream indices"):
        trainer.draw(streams, [1, 2], CLIENTS)
