"""Objectives: values against the paper's formulas, analytic gradients against autograd / finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from algorithms_reference import client_grads
from algorithms_testdata import DIM, M, N_CLIENTS, synthetic_data
from fedrepro.objectives import make_problem

ALPHA = 0.1


def paper_loss(objective: str, A: torch.Tensor, b: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Mean per-sample f_ij over the rows of A (paper Sec 6), written independently of the package."""
    u = A @ x
    if objective == "robust_linear_regression":
        return torch.log(1 + (u - b) ** 2 / 2).mean()
    return torch.log(1 + torch.exp(-b * u)).mean() + ALPHA * (x**2 / (1 + x**2)).sum()


def objective_name(problem) -> str:
    return "robust_linear_regression" if type(problem).__name__ == "RobustLinearRegression" else "logistic_nonconvex"


def random_point(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, DIM, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 0.7


def flat_data(data):
    X, y = data
    n = N_CLIENTS * M
    return torch.from_numpy(X[:n]).double(), torch.from_numpy(y[:n]).double()


def test_value_and_full_grad_match_paper_formula(problem, data):
    A, b = flat_data(data)
    x = random_point(1).requires_grad_(True)
    f = paper_loss(objective_name(problem), A, b, x)
    (g_ref,) = torch.autograd.grad(f, x)
    x = x.detach()
    assert problem.value(x) == pytest.approx(f.item(), rel=1e-13)
    torch.testing.assert_close(problem.full_grad(x), g_ref, rtol=1e-12, atol=1e-14)


def test_full_grad_matches_finite_differences_of_value(problem):
    x, h = random_point(2), 1e-6
    basis = torch.eye(DIM, dtype=torch.float64)
    fd = [(problem.value(x + h * e) - problem.value(x - h * e)) / (2 * h) for e in basis]
    torch.testing.assert_close(problem.full_grad(x), torch.tensor(fd, dtype=torch.float64), rtol=1e-7, atol=1e-9)


def test_client_grads_match_autograd_on_minibatches(problem):
    """Each client at its own point, on its own minibatch, regularizer included (logistic)."""
    gen = torch.Generator().manual_seed(3)
    clients = torch.tensor([0, 7, 39, 7])  # repeated client at a different point is allowed
    x = random_point(4, len(clients))
    sizes = [1, 4, M, 3]
    weights = torch.zeros(len(clients), M, dtype=torch.float64)
    expected = []
    for s, (i, size) in enumerate(zip(clients.tolist(), sizes)):
        idx = torch.randperm(M, generator=gen)[:size]
        weights[s, idx] = 1.0 / size
        xs = x[s].clone().requires_grad_(True)
        f = paper_loss(objective_name(problem), problem.A[i, idx], problem.b[i, idx], xs)
        expected.append(torch.autograd.grad(f, xs)[0])
    torch.testing.assert_close(client_grads(problem, x, clients, weights), torch.stack(expected), rtol=1e-12, atol=1e-14)


def test_full_local_gradients_average_to_full_grad(problem):
    x = random_point(5)
    all_clients = torch.arange(N_CLIENTS)
    local = client_grads(problem, x.expand(N_CLIENTS, DIM), all_clients, None)
    weights = torch.full((N_CLIENTS, M), 1.0 / M, dtype=torch.float64)
    uniform = client_grads(problem, x.expand(N_CLIENTS, DIM), all_clients, weights)
    torch.testing.assert_close(local, uniform, rtol=1e-13, atol=1e-15)
    torch.testing.assert_close(local.mean(dim=0), problem.full_grad(x), rtol=1e-12, atol=1e-14)


def test_row_kernels_match_client_grads(problem):
    """rows_grad / rows_grad_diff (used by the algorithms on gathered minibatch rows) agree with client_grads."""
    clients, idx = torch.tensor([3, 11, 20]), torch.tensor([[0, 5], [9, 2], [4, 4 + 1]])
    y1, y0 = random_point(6, 3), random_point(7, 3)
    weights = torch.zeros(3, M, dtype=torch.float64).scatter_(1, idx, 0.5)
    A = problem.A[clients.unsqueeze(1), idx]
    b = problem.b[clients.unsqueeze(1), idx]
    g1, g0 = client_grads(problem, y1, clients, weights), client_grads(problem, y0, clients, weights)
    torch.testing.assert_close(problem.rows_grad(y1, A, b), g1, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(problem.rows_grad_diff(y1, y0, A, b), g1 - g0, rtol=1e-12, atol=1e-14)
    # A point shared by all clients, as at the start of a FedPAGE partial round.
    shared = problem.rows_grad_diff(y1[0], y0[0], A, b)
    torch.testing.assert_close(shared, problem.rows_grad_diff(y1[0].expand(3, DIM), y0[0].expand(3, DIM), A, b))


def test_make_problem_contiguous_shards_take_first_rows(data):
    X, y = data
    p = make_problem("robust_linear_regression", X, y, n_clients=N_CLIENTS, samples_per_client=M)
    assert (p.n_clients, p.samples_per_client, p.dim) == (N_CLIENTS, M, DIM)
    assert p.A.dtype == p.b.dtype == torch.float64
    for i in (0, 17, N_CLIENTS - 1):
        np.testing.assert_array_equal(p.A[i].numpy(), X[i * M : (i + 1) * M])
        np.testing.assert_array_equal(p.b[i].numpy(), y[i * M : (i + 1) * M])


def test_make_problem_label_sorted_sorts_the_retained_rows_stably(data):
    X, y = data
    n = N_CLIENTS * M
    p = make_problem("logistic_nonconvex", X, y, n_clients=N_CLIENTS, samples_per_client=M, partition="label_sorted")
    order = np.argsort(y[:n], kind="stable")
    np.testing.assert_array_equal(p.A.reshape(n, DIM).numpy(), X[:n][order])
    labels = p.b.reshape(-1).numpy()
    assert (np.diff(labels) >= 0).all() and labels.sum() == y[:n].sum()


@pytest.mark.parametrize(
    ("objective", "kwargs", "message"),
    [
        ("robust_linear_regression", {"n_clients": 50, "samples_per_client": 10}, "only"),
        ("ridge", {"n_clients": 4, "samples_per_client": 10}, "unknown objective"),
        ("robust_linear_regression", {"n_clients": 4, "samples_per_client": 10, "partition": "iid"}, "unknown partition"),
    ],
)
def test_make_problem_rejects_bad_requests(objective, kwargs, message):
    X, y = synthetic_data(n_rows=407)
    with pytest.raises(ValueError, match=message):
        make_problem(objective, X, y, **kwargs)
