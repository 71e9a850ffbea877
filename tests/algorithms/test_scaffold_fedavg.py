"""SCAFFOLD (Option II) and FedAvg against one-client-at-a-time references and known special cases."""

from __future__ import annotations

import torch

import algorithms_reference as ref
from algorithms_testdata import M, N_CLIENTS, Stepped, streams
from fedrepro.algorithms import FedAvg, Scaffold

BASE = {"S": 6, "K": 5, "eta_g": 0.8, "eta_l": 0.03, "b": 3}


def test_fedavg_full_participation_one_full_batch_step_is_gradient_descent(problem):
    eta_l = 0.4
    alg = Stepped(FedAvg(problem, {"S": N_CLIENTS, "K": 1, "eta_g": 1.0, "eta_l": eta_l, "b": M}, streams("gd")))
    x = torch.zeros(problem.dim, dtype=torch.float64)
    for r in range(20):
        alg.round(r)
        x = x - eta_l * problem.full_grad(x)
        torch.testing.assert_close(alg.x, x, rtol=1e-12, atol=1e-14)


def test_fedavg_matches_reference(problem):
    alg = Stepped(FedAvg(problem, BASE, streams("fedavg")))
    x = alg.x
    for r in range(4):
        info = alg.round(r)
        x = ref.fedavg_round(problem, BASE, alg.streams, r, x)
        assert info == {"clients": 6, "sample_grads": 6 * 3 * 5, "full": False}
        torch.testing.assert_close(alg.x, x, rtol=1e-12, atol=1e-14)


def test_scaffold_matches_reference(problem):
    alg = Stepped(Scaffold(problem, BASE, streams("scaffold")))
    x, c, c_clients = alg.x, alg.c, alg.c_clients.clone()
    for r in range(4):
        info = alg.round(r)
        x, c, c_clients = ref.scaffold_round(problem, BASE, alg.streams, r, x, c, c_clients)
        assert info == {"clients": 6, "sample_grads": 6 * 3 * 5, "full": False}
        torch.testing.assert_close(alg.x, x, rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(alg.c, c, rtol=1e-11, atol=1e-13)
        torch.testing.assert_close(alg.c_clients, c_clients, rtol=1e-11, atol=1e-13)
    assert (c_clients.abs().sum(dim=1) > 0).sum() > 6  # controls of several rounds' clients were set


def test_scaffold_server_control_is_the_mean_of_client_controls(problem):
    alg = Stepped(Scaffold(problem, BASE, streams("scaffold-mean")))
    for r in range(10):
        alg.round(r)
    torch.testing.assert_close(alg.c, alg.c_clients.mean(dim=0), rtol=1e-10, atol=1e-14)


def test_scaffold_with_controls_kept_zero_is_fedavg(problem):
    scaffold, fedavg = Stepped(Scaffold(problem, BASE, streams("same"))), Stepped(FedAvg(problem, BASE, streams("same")))
    for r in range(6):
        scaffold.c.zero_()
        scaffold.c_clients.zero_()
        assert scaffold.round(r) == fedavg.round(r)
        torch.testing.assert_close(scaffold.x, fedavg.x, rtol=0, atol=0)
    assert scaffold.c.abs().max() > 0  # left alone, the controls would have corrected the drift
