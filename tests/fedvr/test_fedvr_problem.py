"""Least-squares objective of the fedvr paper: gradients, exact optimum, insurance preprocessing."""

from __future__ import annotations

import pytest
import torch

from fedrepro.objectives.least_squares import LeastSquaresProblem, make_insurance_problem


def _autograd(fn, x: torch.Tensor) -> torch.Tensor:
    x = x.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(fn(x).sum(), x)
    return g


def test_gradients_match_autograd_of_square_loss_without_half(random_problem):
    problem = random_problem()
    gen = torch.Generator().manual_seed(1)
    w = torch.randn(2, problem.n_agents, problem.dim, generator=gen, dtype=torch.float64)
    theta = w[:, 0]

    assert torch.allclose(problem.grad(theta), _autograd(problem.cost, theta))

    def local_cost(v: torch.Tensor) -> torch.Tensor:
        return (torch.einsum("nld,rnd->rnl", problem.Q, v) - problem.Y).square().mean(-1)
    assert torch.allclose(problem.local_grad(w), _autograd(local_cost, w))

    idx = torch.tensor([[[0, 2], [1, 1], [5, 3], [4, 0]]] * 2)  # (R=2, N=4, b=2)
    agents = torch.arange(problem.n_agents)[:, None]
    def batch_cost(v: torch.Tensor) -> torch.Tensor:
        q, y = problem.Q[agents, idx], problem.Y[agents, idx]
        return (torch.einsum("rnbd,rnd->rnb", q, v) - y).square().mean(-1)
    assert torch.allclose(problem.minibatch_grad(w, idx), _autograd(batch_cost, w))


def test_cost_is_the_mean_of_all_per_sample_losses(random_problem):
    problem = random_problem()
    theta = torch.tensor([0.3, -1.0, 2.0], dtype=torch.float64)
    losses = [(problem.Q[n, i] @ theta - problem.Y[n, i]) ** 2 for n in range(4) for i in range(6)]
    assert float(problem.cost(theta)) == pytest.approx(float(sum(losses) / len(losses)), rel=1e-14)


def _assert_is_minimum(problem: LeastSquaresProblem) -> None:
    assert problem.grad(problem.theta_star).abs().max() < 1e-12
    gen = torch.Generator().manual_seed(2)
    for _ in range(20):
        e = 1e-3 * torch.randn(problem.dim, generator=gen, dtype=torch.float64)
        assert float(problem.cost(problem.theta_star + e)) > problem.f_star


def test_normal_equations_give_the_minimum(random_problem):
    _assert_is_minimum(random_problem(n_agents=5, samples=7, dim=4))


def test_insurance_default_preprocessing(insurance_columns):
    problem = make_insurance_problem(insurance_columns)
    assert problem.Q.shape == (18, 50, 5) and problem.Y.shape == (18, 50)
    assert problem.Q.dtype == torch.float64
    assert problem.feature_names == ("age", "sex", "bmi", "children", "smoker")
    # Agent n owns rows 50n .. 50n+49 of the file; min-max keeps 0/1 codes as they are.
    row_50 = [float(insurance_columns["sex"][50]), float(insurance_columns["smoker"][50])]
    assert problem.Q[1, 0, [1, 4]].tolist() == row_50
    assert 0.008 <= problem.f_star <= 0.012  # paper: "optimal cost (the value is 0.01)"
    assert problem.f_star == pytest.approx(0.0091986, abs=1e-6)  # docs/papers/fedvr.md R3
    theta0 = torch.full((5,), 0.5, dtype=torch.float64)
    assert float(problem.cost(theta0)) == pytest.approx(0.616813, abs=1e-5)
    _assert_is_minimum(problem)


def test_insurance_variants(insurance_columns):
    maxabs = make_insurance_problem(insurance_columns, scaling="maxabs")
    assert maxabs.f_star == pytest.approx(0.009677, abs=1e-6)
    all_rows = make_insurance_problem(insurance_columns, scaling_rows="all")
    assert all_rows.f_star == pytest.approx(0.009194, abs=1e-6)
    # Intercept plus every region indicator is collinear (rank 9 of 10); f* is still exact.
    with_region = ("age", "sex", "bmi", "children", "smoker", "region")
    wide = make_insurance_problem(insurance_columns, features=with_region, intercept=True)
    assert wide.dim == 10 and wide.feature_names[-1] == "intercept"
    assert wide.grad(wide.theta_star).abs().max() < 1e-12
    assert wide.f_star == pytest.approx(0.00887, abs=1e-5)
    shuffled = make_insurance_problem(insurance_columns, rows="random", rows_seed=3)
    assert shuffled.Q.shape == (18, 50, 5) and 0.008 <= shuffled.f_star <= 0.012
    with pytest.raises(ValueError):
        make_insurance_problem(insurance_columns, n_agents=30)
