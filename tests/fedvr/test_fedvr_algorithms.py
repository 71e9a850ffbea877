"""FedAvg-SVRG (Algorithm 1) and the FedAvg baselines of the fedvr paper."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrepro.algorithms.probabilistic_agents import (
    activation_probabilities,
    aggregate_inverse_prob,
    draw_active,
    local_sgd,
    sample_indices,
)
from fedrepro.algorithms import METHODS, method as registered
from fedrepro.algorithms.fedvr import DEFAULT_HP, Runs, resolve_hp, step_sizes, svrg_direction, svrg_local
from fedrepro.objectives.least_squares import LeastSquaresProblem

ALL_ACTIVE = {"kind": "explicit", "p": [1.0] * 4}


def run_monte_carlo(method: str, problem: LeastSquaresProblem, hp, *, n_mc: int, rounds: int,
                     streams) -> dict[str, np.ndarray]:
    """Run `method` for n_mc Monte Carlo runs of `rounds` rounds (built as the engine builds it, simulated at once)
    with the settings `hp`. Returns {"theta": (n_mc, rounds+1, d), "cost": (n_mc, rounds+1)}, float64, round 0 = θ^0."""
    assert set(hp) <= set(DEFAULT_HP), f"not a hyperparameter: {set(hp) - set(DEFAULT_HP)}"
    fedvr = registered("monte_carlo", method).build({**hp, "rounds": rounds}, Runs(problem, n_mc), streams)
    theta = fedvr.init()
    trajectory = [theta]
    for k in range(rounds):
        theta, _ = fedvr.round(theta, k)
        trajectory.append(theta)
    thetas = torch.stack(trajectory, dim=1)
    return {"theta": thetas.cpu().numpy(), "cost": problem.cost(thetas).cpu().numpy()}


def _gd(problem: LeastSquaresProblem, theta: torch.Tensor, steps: int, step: float) -> torch.Tensor:
    """Every agent's plain local gradient descent from θ -> (N, d)."""
    w = theta.expand(problem.n_agents, problem.dim)
    for _ in range(steps):
        w = w - step * problem.local_grad(w)
    return w


def _identical_rows(random_problem) -> LeastSquaresProblem:
    """Each agent's L rows are copies of one row: every sample gradient is the full local one."""
    base = random_problem(n_agents=4, samples=1, dim=3, seed=5)
    return LeastSquaresProblem.from_data(base.Q.expand(4, 6, 3), base.Y.expand(4, 6))


def test_first_inner_step_is_a_full_local_gradient_step(random_problem):
    problem = random_problem()
    theta = torch.tensor([[0.5, 0.5, 0.5], [0.1, -0.2, 0.3]], dtype=torch.float64)
    idx = torch.randint(6, (2, 4, 1, 1), generator=torch.Generator().manual_seed(0))
    expected = theta[:, None, :] - 0.1 * problem.local_grad(theta[:, None, :].expand(2, 4, 3))
    assert torch.allclose(svrg_local(problem, theta, idx, delta=0.1), expected, rtol=0, atol=1e-15)


def test_svrg_with_exact_gradients_and_full_participation_is_gradient_descent(random_problem, streams):
    problem = _identical_rows(random_problem)
    S, M, delta, rounds = 3, 2, 0.1, 4
    hp = {"activation": ALL_ACTIVE, "S": S, "M": M, "delta": delta}
    out = run_monte_carlo("fedavg_svrg", problem, hp, n_mc=2, rounds=rounds, streams=streams("gd"))
    theta = torch.full((3,), 0.5, dtype=torch.float64)
    for k in range(rounds):
        theta = _gd(problem, theta, S * M, delta).mean(dim=0)  # 1/p = 1, divided by N
        np.testing.assert_allclose(out["theta"][:, k + 1], theta.expand(2, 3).numpy(), rtol=1e-12, atol=1e-14)


def test_one_svrg_step_with_everyone_active_is_a_gradient_step_on_f(random_problem, streams):
    problem = random_problem()
    hp = {"activation": ALL_ACTIVE, "S": 1, "M": 1, "delta": 0.5}  # Hessian eigenvalues 0.10..1.77
    out = run_monte_carlo("fedavg_svrg", problem, hp, n_mc=1, rounds=500, streams=streams("gd1"))
    theta0 = torch.full((3,), 0.5, dtype=torch.float64)
    np.testing.assert_allclose(out["theta"][0, 1], (theta0 - 0.5 * problem.grad(theta0)).numpy(), rtol=1e-13)
    np.testing.assert_allclose(out["theta"][0, -1], problem.theta_star.numpy(), atol=1e-8)
    assert out["cost"][0, -1] == pytest.approx(problem.f_star, abs=1e-12)


def test_variance_reduced_gradient_is_unbiased(random_problem):
    problem = random_problem()
    gen = torch.Generator().manual_seed(3)
    w = torch.randn(problem.n_agents, problem.dim, generator=gen, dtype=torch.float64)
    w_snap = torch.randn(problem.n_agents, problem.dim, generator=gen, dtype=torch.float64)
    mu = problem.local_grad(w_snap)
    # Exact expectation: the uniform average over all L choices of # is ∇f_n(w).
    every = torch.arange(problem.samples_per_agent)[:, None, None].expand(-1, problem.n_agents, 1)
    v_all = svrg_direction(problem, w, w_snap, mu, every)
    assert torch.allclose(v_all.mean(dim=0), problem.local_grad(w), atol=1e-13)
    # Monte Carlo over the algorithm's draws, within 5 standard errors.
    draws = torch.randint(problem.samples_per_agent, (20000, problem.n_agents, 1), generator=gen)
    v = svrg_direction(problem, w, w_snap, mu, draws)
    stderr = v.std(dim=0) / np.sqrt(len(v))
    assert ((v.mean(dim=0) - problem.local_grad(w)).abs() <= 5 * stderr + 1e-12).all()
    assert not torch.allclose(v[0], v[1])  # it is genuinely stochastic


def test_aggregation_divides_by_all_agents_with_inverse_probabilities():
    theta = torch.tensor([[1.0, 2.0]], dtype=torch.float64)
    w = torch.tensor([[[2.0, 2.0], [5.0, 5.0], [1.0, 0.0]]], dtype=torch.float64)
    p = torch.tensor([0.5, 0.25, 1.0], dtype=torch.float64)
    active = torch.tensor([[True, False, True]])
    expected = theta + (torch.tensor([1.0, 0.0]) / 0.5 + torch.tensor([0.0, -2.0]) / 1.0) / 3
    assert torch.allclose(aggregate_inverse_prob(theta, w, active, p), expected)
    nobody = torch.zeros(1, 3, dtype=torch.bool)
    assert torch.equal(aggregate_inverse_prob(theta, w, nobody, p), theta)
    # An inactive agent's non-finite local model never leaks into θ.
    w_bad = w.clone()
    w_bad[0, 1] = float("inf")
    assert torch.allclose(aggregate_inverse_prob(theta, w_bad, active, p), expected)


def test_aggregation_is_unbiased_over_activation(streams):
    n_mc, n, d = 4000, 5, 2
    gen = torch.Generator().manual_seed(4)
    theta = torch.randn(d, generator=gen, dtype=torch.float64).expand(n_mc, d)
    w = torch.randn(n, d, generator=gen, dtype=torch.float64).expand(n_mc, n, d)
    p = torch.tensor([0.1, 0.3, 0.5, 0.7, 1.0], dtype=torch.float64)
    active = draw_active(p, n_mc, 0, streams("unbiased"))
    assert torch.allclose(active.double().mean(dim=0), p, atol=0.03)
    updates = aggregate_inverse_prob(theta, w, active, p)
    full = theta[0] + (w[0] - theta[0]).mean(dim=0)
    stderr = updates.std(dim=0) / np.sqrt(n_mc)
    assert ((updates.mean(dim=0) - full).abs() <= 5 * stderr).all()


def test_local_sgd_single_sample_step(random_problem):
    problem = random_problem()
    theta = torch.tensor([[0.5, 0.5, 0.5]], dtype=torch.float64)
    idx = torch.tensor([[[[2]], [[0]], [[5]], [[1]]]])  # (R=1, N=4, I=1, b=1)
    w = local_sgd(problem, theta, idx, eta=0.1)
    for n, i in enumerate([2, 0, 5, 1]):
        q, y = problem.Q[n, i], problem.Y[n, i]
        assert torch.allclose(w[0, n], theta[0] - 0.1 * 2 * q * (q @ theta[0] - y))


def test_epoch_sampling_passes_over_every_sample(random_problem):
    problem = random_problem(samples=10)
    idx = sample_indices(problem, torch.Generator().manual_seed(0), steps=4, batch_size=5, sampling="epochs")
    assert idx.shape == (4, 4, 5)
    for epoch in idx.reshape(4, 2, 10):
        for agent_pass in epoch:
            assert sorted(agent_pass.tolist()) == list(range(10))


def test_uniform_fedavg_averages_the_selected_agents(random_problem, streams):
    problem = _identical_rows(random_problem)
    hp = {"agents_per_round": 4, "local_steps": 3, "eta_schedule": "constant", "eta": 0.2}
    out = run_monte_carlo("fedavg_uniform", problem, hp, n_mc=1, rounds=1, streams=streams("u"))
    theta0 = torch.full((3,), 0.5, dtype=torch.float64)
    local = _gd(problem, theta0, 3, 0.2).numpy()
    np.testing.assert_allclose(out["theta"][0, 1], local.mean(axis=0), rtol=1e-12)
    hp_one = {**hp, "agents_per_round": 1}
    one = run_monte_carlo("fedavg_uniform", problem, hp_one, n_mc=1, rounds=1, streams=streams("u"))
    assert any(np.allclose(one["theta"][0, 1], row, rtol=1e-12) for row in local)


def test_hyperparameters_and_schedules(streams):
    assert resolve_hp({})["delta"] == 0.1 and resolve_hp({"S": 10})["S"] == 10
    with pytest.raises(ValueError, match="unknown"):
        resolve_hp({"detla": 0.1})
    assert step_sizes(resolve_hp({}), 3) == [0.1, 0.1, 0.1]
    decaying = step_sizes(resolve_hp({"eta_schedule": "inv_sqrt_round"}), 4)
    assert decaying == pytest.approx([1.0, 2**-0.5, 3**-0.5, 0.5])
    p = activation_probabilities(resolve_hp({})["activation"], 18, 3, streams("p"))
    assert p.shape == (3, 18) and p[0, 0] == pytest.approx(0.1) and p[0, -1] == pytest.approx(0.9)
    redraw = {"kind": "uniform_per_round", "low": 0.1, "high": 0.9}
    per_round = activation_probabilities(redraw, 18, 3, streams("p"))
    assert not torch.equal(per_round[0], per_round[1]) and ((per_round >= 0.1) & (per_round <= 0.9)).all()
    with pytest.raises(ValueError):
        activation_probabilities({"kind": "explicit", "p": [0.0, 1.0]}, 2, 1, streams("p"))


@pytest.mark.parametrize("method", sorted(METHODS["monte_carlo"]))
def test_determinism_and_batch_invariance(method, random_problem, streams):
    problem = random_problem()
    hp = {"activation": {"kind": "linspace", "low": 0.2, "high": 0.9}, "agents_per_round": 2}
    a = run_monte_carlo(method, problem, hp, n_mc=3, rounds=5, streams=streams("det"))
    b = run_monte_carlo(method, problem, hp, n_mc=3, rounds=5, streams=streams("det"))
    single = run_monte_carlo(method, problem, hp, n_mc=1, rounds=5, streams=streams("det"))
    other = run_monte_carlo(method, problem, hp, n_mc=3, rounds=5, streams=streams("other"))
    assert a["theta"].shape == (3, 6, 3) and a["cost"].shape == (3, 6) and a["cost"].dtype == np.float64
    assert np.array_equal(a["theta"], b["theta"]) and np.array_equal(a["cost"], b["cost"])
    assert np.array_equal(a["theta"][:1], single["theta"])  # run r does not depend on n_mc
    assert not np.array_equal(a["theta"][1], a["theta"][2])
    assert not np.array_equal(a["theta"], other["theta"])
    np.testing.assert_allclose(a["theta"][:, 0], 0.5)


def test_unknown_method(random_problem, streams):
    with pytest.raises(ValueError, match="unknown method"):
        run_monte_carlo("no_such_method", random_problem(), {}, n_mc=1, rounds=1, streams=streams("x"))


def test_insurance_smoke_all_methods_descend(insurance_columns, streams):
    from fedrepro.objectives.least_squares import make_insurance_problem

    problem = make_insurance_problem(insurance_columns)
    for method in METHODS["monte_carlo"]:
        out = run_monte_carlo(method, problem, {}, n_mc=2, rounds=10, streams=streams("smoke"))
        assert np.isfinite(out["cost"]).all()
        assert (out["cost"][:, -1] - problem.f_star < 0.05 * (out["cost"][:, 0] - problem.f_star)).all()


def _reference_loop(
    problem: LeastSquaresProblem, method: str, p: list[float], S: int, M: int, rounds: int, streams
) -> np.ndarray:
    """Algorithm 1 / FedAvg of [15] written literally, one agent and one sample at a time,
    from the same streams as the vectorized code (so both must agree to rounding)."""
    Q, Y = problem.Q.numpy(), problem.Y.numpy()
    n_agents, length, _ = Q.shape
    grad_i = lambda n, i, w: 2 * Q[n, i] * (Q[n, i] @ w - Y[n, i])  # noqa: E731
    theta = np.full(problem.dim, 0.5)
    for k in range(rounds):
        u = torch.rand(n_agents, generator=streams("activation", 0, k), dtype=torch.float64).numpy()
        if method == "fedavg_svrg":
            idx = torch.randint(length, (n_agents, S, M), generator=streams("samples", 0, k)).numpy()
        else:
            idx = torch.randint(length, (n_agents, S * M, 1), generator=streams("samples", 0, k)).numpy()
        agg = np.zeros_like(theta)
        for n in range(n_agents):
            if not u[n] < p[n]:
                continue
            if method == "fedavg_svrg":
                w_snap = theta.copy()
                for s in range(S):
                    mu = np.mean([grad_i(n, i, w_snap) for i in range(length)], axis=0)
                    w = w_snap.copy()
                    for m in range(M):
                        i = idx[n, s, m]
                        w = w - 0.1 * (grad_i(n, i, w) - grad_i(n, i, w_snap) + mu)
                    w_snap = w
            else:
                w_snap = theta.copy()
                for t in range(S * M):
                    w_snap = w_snap - 0.1 * grad_i(n, idx[n, t, 0], w_snap)
            agg += (w_snap - theta) / p[n]
        theta = theta + agg / n_agents
    return theta


@pytest.mark.parametrize("method", ["fedavg_svrg", "fedavg_prob"])
def test_vectorized_matches_a_literal_loop(method, random_problem, streams):
    problem = random_problem()
    p = [0.3, 0.6, 0.8, 1.0]
    hp = {"activation": {"kind": "explicit", "p": p}, "S": 3, "M": 2}
    out = run_monte_carlo(method, problem, hp, n_mc=2, rounds=6, streams=streams("loop"))
    expected = _reference_loop(problem, method, p, S=3, M=2, rounds=6, streams=streams("loop"))
    np.testing.assert_allclose(out["theta"][0, -1], expected, rtol=1e-12, atol=1e-14)
