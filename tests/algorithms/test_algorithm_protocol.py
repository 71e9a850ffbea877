"""The protocol shared by the finite-sum methods: resume, determinism, counters, hyperparameter plumbing, sampling.
Every method of the registry (algorithms/__init__.py METHODS["finite_sum"]) is built from one run's settings,
SPEC (method_envs.py FINITE_SUM, the shape test's too), as the engine builds it: a new method is picked up by every
test here (and stops them with a KeyError naming a setting SPEC lacks); one that subclasses FedAvg also by the tests
of FedAvg's counters and step split."""

from __future__ import annotations

import functools
import io

import pytest
import torch

from algorithms_testdata import M, N_CLIENTS, Stepped, streams
from fedrepro.algorithms import METHODS, method
from fedrepro.algorithms.fedavg import FedAvg
from fedrepro.algorithms.method import restore
from fedrepro.algorithms.kernels import minibatches
from fedrepro.sampling import sample_clients
from method_envs import FINITE_SUM

SPEC = FINITE_SUM  # one run's settings for every method
NAMES = sorted(METHODS["finite_sum"])
# The methods that take FedAvg's local SGD, counters and step split (SCAFFOLD, a FedProx, ...): a subclass is one
FEDAVG_LIKE = sorted(name for name, entry in METHODS["finite_sum"].items() if issubclass(entry, FedAvg))


def build(name, problem, seed=0, spec=SPEC):
    """A finite-sum method as the engine builds it: the registry's entry, from the run's settings."""
    return Stepped(method("finite_sum", name).build(spec, problem, streams(name, seed)))


def construct(name, problem, hp, method_streams):
    """A finite-sum method from its hyperparameters as given (the constructor the registry's build calls)."""
    return method("finite_sum", name)(problem, hp, method_streams)


def run(name, problem, seed, rounds: range, alg=None):
    alg = alg or build(name, problem, seed)
    for r in rounds:
        alg.round(r)
    return alg


@pytest.mark.parametrize("name", NAMES)
def test_resume_from_a_saved_state_is_bit_exact(name, problem):
    straight = run(name, problem, 0, range(10))
    first = run(name, problem, 0, range(5))
    buffer = io.BytesIO()
    torch.save(first.state, buffer)  # through a checkpoint file, as the runner does
    buffer.seek(0)
    resumed = build(name, problem)
    resumed.state = restore(torch.load(buffer, weights_only=True), resumed.state)
    run(name, problem, 0, range(5, 10), alg=resumed)
    assert torch.equal(straight.x, resumed.x)
    for key, value in straight.state.items():
        assert torch.equal(value, resumed.state[key]), key


@pytest.mark.parametrize("name", NAMES)
def test_a_round_leaves_the_state_it_is_given_alone(name, problem):
    alg = run(name, problem, 0, range(3))
    saved = alg.state
    copies = {k: v.clone() for k, v in saved.items()}
    run(name, problem, 0, range(3, 6), alg=alg)
    assert all(torch.equal(saved[k], copies[k]) for k in copies) and not torch.equal(alg.x, copies["x"])


def test_a_saved_state_of_another_method_is_refused(problem):
    with pytest.raises(ValueError, match="keys"):
        restore(build("fedavg", problem).state, build("scaffold", problem).state)


@pytest.mark.parametrize("name", NAMES)
def test_same_streams_same_run_different_seed_different_run(name, problem):
    a, b, c = (run(name, problem, seed, range(15)) for seed in (0, 0, 1))
    assert torch.equal(a.x, b.x)
    assert not torch.allclose(a.x, c.x)


@pytest.mark.parametrize("name", FEDAVG_LIKE)
def test_baseline_counters(name, problem):
    """b*K sample gradients per participating client: 40 for b = 4, K = 10 (paper §6.2; claim C11)."""
    alg = build(name, problem, spec=SPEC | {"S": 20, "K": 10, "b": 4})
    assert alg.round(0) == {"clients": 20, "sample_grads": 20 * 40, "full": False}


def test_effective_step_size_convention():
    algorithm = functools.partial(method, "finite_sum")
    page = algorithm("fedpage").hyperparameters(
        {"eta_tilde": 0.1, "K": 10, "c_l": 0.1, "S": 10, "b1": "full", "b2": M, "b3": 1, "p": "auto"}, 3250, M)
    expected = {"K": 10, "eta_g": 0.1, "eta_l": pytest.approx(0.001), "S": 10, "b1": M, "b2": M, "b3": 1, "p": 10 / 3250}
    assert page == expected
    for name in FEDAVG_LIKE:  # FedAvg's hyperparameters, and a subclass's own ones from SPEC
        hp = algorithm(name).hyperparameters(SPEC | {"eta_tilde": 0.03, "K": 10, "c_l": 0.1, "S": 20, "b": 4}, 3250, M)
        assert {k: hp[k] for k in FedAvg.HP} == {"K": 10, "eta_g": 1.0, "eta_l": pytest.approx(0.003), "S": 20, "b": 4}
        assert hp["K"] * hp["eta_g"] * hp["eta_l"] == pytest.approx(0.03)
    with pytest.raises(ValueError, match="derived"):
        algorithm("fedavg").hyperparameters({"eta_tilde": 0.1, "K": 10, "S": 2, "b": 4, "eta_l": 0.5}, 3250, M)


@pytest.mark.parametrize("name", FEDAVG_LIKE)
def test_the_global_step_split_keeps_the_effective_step_and_moves_the_server_by_sqrt_S(name, problem):
    """step_split global_sqrt_S (reading step_split): eta_g = sqrt(S), eta_l = eta_tilde / (K sqrt(S)), the same
    eta_tilde; with one local step from x on the same minibatches, the server's move is sqrt(S) times the local
    split's over S times smaller local steps: the same to rounding, for a step linear in eta_l (one SGD step)."""
    spec = SPEC | {"eta_tilde": 0.03, "K": 10, "S": 16, "b": 4}
    hp = method("finite_sum", name).hyperparameters({**spec, "step_split": "global_sqrt_S"}, 3250, M)
    assert hp["eta_g"] == 4.0 and hp["eta_l"] == pytest.approx(0.03 / 40)
    assert hp["K"] * hp["eta_g"] * hp["eta_l"] == pytest.approx(0.03)
    moves = []
    for split in ("local", "global_sqrt_S"):
        one = method("finite_sum", name).hyperparameters({**spec, "K": 1, "step_split": split}, 3250, M)
        alg = Stepped(construct(name, problem, one, streams("split")))
        before = alg.x.clone()
        alg.round(0)
        moves.append(alg.x - before)
    torch.testing.assert_close(moves[0], moves[1], rtol=1e-10, atol=1e-14)


def test_an_algorithm_validates_its_name_and_hyperparameters(problem):
    with pytest.raises(ValueError, match="unknown method"):
        build("no_such_method", problem)
    page = method("finite_sum", "fedpage").hyperparameters(SPEC, N_CLIENTS, M)
    with pytest.raises(ValueError, match=r"missing hyperparameters \['p'\], unknown \['q'\]"):
        construct("fedpage", problem, {k: v for k, v in page.items() if k != "p"} | {"q": 1}, streams())
    with pytest.raises(ValueError, match="b=11"):
        build("fedavg", problem, spec=SPEC | {"b": M + 1})
    with pytest.raises(ValueError, match="S=41"):
        build("scaffold", problem, spec=SPEC | {"S": N_CLIENTS + 1})


def test_sampling_is_uniform_without_replacement():
    gen = torch.Generator().manual_seed(0)
    clients = torch.stack([sample_clients(gen, 12, 5) for _ in range(2000)])
    assert all(len(set(row.tolist())) == 5 for row in clients)
    counts = torch.bincount(clients.reshape(-1), minlength=12).double()
    assert (counts / counts.mean() - 1).abs().max() < 0.1
    # Encode each row's index into the data so the gathered rows reveal which samples were drawn.
    S, steps, size = 3, 3000, 4
    A = torch.arange(S * M, dtype=torch.float64).reshape(S, M, 1)
    b = torch.zeros(S, M, dtype=torch.float64)
    rows, _ = minibatches(gen, A, b, steps, size)
    drawn = rows.squeeze(-1).long()  # (steps, S, size) flat sample ids
    assert drawn.shape == (steps, S, size)
    assert ((drawn // M) == torch.arange(S).view(1, S, 1)).all()  # each client only sees its own rows
    assert all(len(set(batch.tolist())) == size for batch in drawn.reshape(-1, size))
    counts = torch.bincount((drawn % M).reshape(-1), minlength=M).double()
    assert (counts / counts.mean() - 1).abs().max() < 0.1
    full_rows, _ = minibatches(gen, A, b, 2, M)
    assert torch.equal(full_rows[1], A)
