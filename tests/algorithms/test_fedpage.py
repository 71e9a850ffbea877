"""FedPAGE (Algorithm 1) against the paper's pseudocode and the identities that follow from it
(paper §3; K = 1 is PAGE)."""

from __future__ import annotations

import pytest
import torch

import algorithms_reference as ref
from algorithms_testdata import M, N_CLIENTS, Stepped, streams
from fedrepro.algorithms import FedPAGE


def fedpage(problem, seed=0, **overrides) -> Stepped:
    hp = {"S": 5, "K": 4, "eta_g": 0.3, "eta_l": 0.02, "b1": M, "b2": M, "b3": 1, "p": 0.0} | overrides
    return Stepped(FedPAGE(problem, hp, streams("fedpage", seed)))


def run(alg, rounds: range) -> list[dict]:
    return [alg.round(r) for r in rounds]


def test_round_zero_is_a_full_gradient_step(problem):
    alg = fedpage(problem, p=0.0)
    info = alg.round(0)
    assert info == {"clients": N_CLIENTS, "sample_grads": N_CLIENTS * M, "full": True}
    g0 = problem.full_grad(torch.zeros(problem.dim, dtype=torch.float64))
    torch.testing.assert_close(alg.g_prev, g0, rtol=0, atol=0)
    torch.testing.assert_close(alg.x, -0.3 * g0, rtol=0, atol=0)


def test_minibatch_full_round_averages_client_minibatch_gradients(problem):
    alg = fedpage(problem, b1=3)
    info = alg.round(0)
    assert info["sample_grads"] == N_CLIENTS * 3
    batches = ref.draw_minibatches(alg.streams("batches", 0), 1, N_CLIENTS, M, 3)[0]
    x0 = torch.zeros(problem.dim, dtype=torch.float64)
    expected = torch.stack([ref.grad(problem, x0, i, batches[i]) for i in range(N_CLIENTS)]).mean(dim=0)
    torch.testing.assert_close(alg.g_prev, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(("K", "b2", "b3"), [(4, M, 1), (3, 4, 2), (1, 6, 1)])
def test_partial_round_matches_pseudocode(problem, K, b2, b3):
    """g^r (line 26, from the local displacements) = mean of all K*S local estimators = the batched g."""
    alg = fedpage(problem, K=K, b2=b2, b3=b3)
    run(alg, range(3))
    x, x_prev, g_prev = alg.x, alg.x_prev, alg.g_prev
    info = alg.round(3)
    expected = ref.fedpage_partial_round(problem, alg.hp, alg.streams, 3, x, x_prev, g_prev)
    assert info == {"clients": 5, "sample_grads": 5 * (2 * b2 + 2 * b3 * (K - 1)), "full": False}
    torch.testing.assert_close(expected["estimator_mean"], expected["g"], rtol=1e-9, atol=1e-13)
    torch.testing.assert_close(alg.g_prev, expected["estimator_mean"], rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(alg.x_prev, x, rtol=0, atol=0)
    torch.testing.assert_close(alg.x, x - 0.3 * expected["g"], rtol=1e-12, atol=1e-14)


def test_eta_l_equal_eta_g_over_K_is_model_averaging(problem):
    K, eta_g = 5, 0.2
    alg = fedpage(problem, K=K, eta_g=eta_g, eta_l=eta_g / K)
    run(alg, range(2))
    x, x_prev, g_prev = alg.x, alg.x_prev, alg.g_prev
    alg.round(2)
    finals = ref.fedpage_partial_round(problem, alg.hp, alg.streams, 2, x, x_prev, g_prev)["finals"]
    torch.testing.assert_close(alg.x, finals.mean(dim=0), rtol=1e-12, atol=1e-14)


def test_full_local_batches_give_the_telescoped_recursion(problem):
    """With b2 = b3 = M: g_{i,k} = grad f_i(y_{i,k}) - grad f_i(x^{r-1}) + g^{r-1} (Algorithm 1 lines 17, 21
    with full batches, App. A.2's -Full)."""
    K, eta_l = 4, 0.05
    alg = fedpage(problem, K=K, b2=M, b3=M, eta_l=eta_l)
    run(alg, range(2))
    x, x_prev, g_prev = alg.x, alg.x_prev, alg.g_prev
    alg.round(2)
    estimators = []
    for i in ref.draw_clients(alg.streams, 2, N_CLIENTS, 5):
        anchor = g_prev - ref.grad(problem, x_prev, i, None)
        y = x
        for _ in range(K):
            g_loc = ref.grad(problem, y, i, None) + anchor
            estimators.append(g_loc)
            y = y - eta_l * g_loc
    torch.testing.assert_close(alg.g_prev, torch.stack(estimators).mean(dim=0), rtol=1e-11, atol=1e-14)


def test_K1_is_PAGE_independently_of_eta_l(problem):
    """FedPAGE-1 = PAGE: g = g_prev + (1/S) sum_i (grad_I2 f_i(x) - grad_I2 f_i(x_prev)); eta_l irrelevant."""
    runs = [fedpage(problem, K=1, b2=4, eta_l=eta_l, p=0.2) for eta_l in (1e-3, 0.7)]
    partial_rounds = 0
    for r in range(25):
        x, x_prev, g_prev = runs[0].x, runs[0].x_prev, runs[0].g_prev
        infos = [alg.round(r) for alg in runs]
        assert infos[0] == infos[1]
        torch.testing.assert_close(runs[0].x, runs[1].x, rtol=0, atol=0)
        if not infos[0]["full"]:
            partial_rounds += 1
            clients = ref.draw_clients(runs[0].streams, r, N_CLIENTS, 5)
            batches = ref.draw_minibatches(runs[0].streams("batches", r), 1, 5, M, 4)[0]
            diffs = [ref.grad(problem, x, i, B) - ref.grad(problem, x_prev, i, B) for i, B in zip(clients, batches)]
            torch.testing.assert_close(runs[0].g_prev, g_prev + torch.stack(diffs).mean(dim=0), rtol=1e-12, atol=1e-14)
    assert 0 < partial_rounds < 24  # both kinds of rounds were exercised


def test_full_round_frequency_and_communication_parity(robust):
    """P(full) = p for r >= 1, and clients per round = p N + (1-p) S, about 2S at p = S/N (paper line 225, C10)."""
    S, R = 4, 3000
    p = S / N_CLIENTS
    infos = run(fedpage(robust, S=S, K=1, p=p), range(R))  # K = 1 keeps this cheap; the coin ignores K
    assert infos[0]["full"]
    full = [info["full"] for info in infos[1:]]
    freq = sum(full) / len(full)
    assert abs(freq - p) < 4 * (p * (1 - p) / len(full)) ** 0.5
    mean_clients = sum(info["clients"] for info in infos) / R
    assert mean_clients == pytest.approx(p * N_CLIENTS + (1 - p) * S, rel=0.1)


def test_sample_gradient_counter_matches_paper_parity(robust):
    """2 b2 + 2 b3 (K-1) sample gradients per client in a partial round: 38 for M = K = 10, b3 = 1 (C11);
    b1 per client in a full round."""
    infos = run(fedpage(robust, S=4, K=10, b3=1, p=0.3), range(30))
    assert {info["full"] for info in infos} == {True, False}
    for info in infos:
        assert info["sample_grads"] == info["clients"] * (M if info["full"] else 38)
