"""FedCluster's schedule (clusters, cycles, activations), randomness and the centralized SGD baseline."""

from __future__ import annotations

import pytest
import torch

from fedrepro.algorithms.fedcluster import CentralizedSGD, FedAvg, FedCluster, fedcluster_lr
from fedrepro.nn import LocalOptimizer, LocalTrainer

from nn_testdata import N_DEVICES, make_problem, make_streams

CLUSTERS = torch.randperm(N_DEVICES, generator=torch.Generator().manual_seed(7)).view(4, 6)


class Recording(LocalTrainer):
    """Records who trains in each call, in order."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[list[int]] = []

    def run(self, W, idx):
        self.calls.append(sorted(int(k) for k in self._active))
        return super().run(W, idx)

    def draw(self, streams, rnd, clients):
        self._active = clients
        return super().draw(streams, rnd, clients)


def recording(problem, **kw) -> Recording:
    return Recording(problem.model, problem.data, LocalOptimizer("sgd", 0.1), 2, 3, "vectorized", **kw)


def cluster_of(device: int) -> int:
    return int((CLUSTERS == device).nonzero()[0, 0])


@pytest.mark.parametrize("order", ["reshuffle", "fixed"])
def test_each_round_visits_every_cluster_once_with_each_device_at_most_once(order):
    problem = make_problem("mlp")
    trainer = recording(problem)
    algo = FedCluster(trainer, CLUSTERS, make_streams("schedule"), frac=0.34, cluster_order=order)
    W, orders = problem.W0, []
    for r in range(4):
        trainer.calls.clear()
        W, info = algo.round(W, r)
        assert info == {"updates": 4, "clients": 8, "samples": 8 * 2 * 3}  # M global updates (I3)
        assert len(trainer.calls) == 4 and all(len(c) == 2 for c in trainer.calls)  # 10%-style share per cycle
        devices = [k for call in trainer.calls for k in call]
        assert len(set(devices)) == len(devices)  # each device at most once per round (I2)
        visited = [{cluster_of(k) for k in call} for call in trainer.calls]
        assert all(len(v) == 1 for v in visited)  # a cycle draws from one cluster
        orders.append([v.pop() for v in visited])
    assert all(sorted(o) == [0, 1, 2, 3] for o in orders)
    if order == "fixed":
        assert orders == [[0, 1, 2, 3]] * 4
    else:
        assert len({tuple(o) for o in orders}) > 1


def test_samples_per_round_are_equal_across_methods():
    """I1: FedAvg (10% of all), FedCluster (10% of each of M clusters), centralized SGD (steps x 2B)."""
    problem = make_problem("mlp")
    trainer = problem.trainer("sgd", steps=3, batch=4)
    streams = make_streams("parity")
    fedavg = FedAvg(trainer, streams, frac=0.25)
    fedcluster = FedCluster(trainer, CLUSTERS.view(2, 12), streams, frac=0.25)
    csgd = CentralizedSGD(trainer, streams, steps=9, batch=8)
    samples = [algo.round(problem.W0, 0)[1]["samples"] for algo in (fedavg, fedcluster, csgd)]
    assert samples == [6 * 3 * 4] * 3


def test_rounds_are_deterministic_and_depend_on_the_run_key():
    problem = make_problem("cnn_tiny")
    trainer = problem.trainer("adam", lr=0.01, backend="vectorized")
    first = FedCluster(trainer, CLUSTERS, make_streams("run-a"), frac=0.34).round(problem.W0, 0)[0]
    again = FedCluster(trainer, CLUSTERS, make_streams("run-a"), frac=0.34).round(problem.W0, 0)[0]
    other = FedCluster(trainer, CLUSTERS, make_streams("run-b"), frac=0.34).round(problem.W0, 0)[0]
    assert torch.equal(first, again)
    assert not torch.allclose(first, other)


@pytest.mark.parametrize("backend", ["loop", "vectorized"])
def test_a_clients_batches_and_training_do_not_depend_on_the_other_active_clients(backend):
    problem = make_problem("cnn_tiny")
    trainer = problem.trainer("sgdm", backend=backend)
    streams = make_streams("independence")
    together = trainer.draw(streams, 5, torch.tensor([3, 11, 17]))
    alone = trainer.draw(streams, 5, torch.tensor([11]))
    assert torch.equal(together[1], alone[0])
    assert not torch.equal(together[0], together[1])
    assert not torch.equal(trainer.draw(streams, 6, torch.tensor([11]))[0], alone[0])  # a new round, new batches
    torch.testing.assert_close(trainer.run(problem.W0, together)[1], trainer.run(problem.W0, alone)[0],
                               rtol=1e-12, atol=1e-14)


def test_minibatches_are_distinct_local_samples():
    problem = make_problem("mlp")
    trainer = problem.trainer(steps=50, batch=5)
    idx = trainer.draw(make_streams("batches"), 0, torch.tensor([4]))[0]  # (steps, batch) pool indices
    local = set(problem.data.table[4].tolist())
    assert all(set(row.tolist()) <= local and len(set(row.tolist())) == 5 for row in idx)
    assert len(set(idx.flatten().tolist())) == len(local)  # over 50 steps every local sample shows up


def test_centralized_sgd_is_sgd_on_distinct_pooled_slots():
    problem = make_problem("mlp")
    trainer = problem.trainer("sgd", lr=0.1, backend="loop")
    n_slots = problem.data.table.numel()
    steps, batch = 2 * n_slots // 7 + 3, 7  # more steps than one permutation of the pool holds
    seen = []
    trainer.run = lambda W, idx: seen.append(idx) or LocalTrainer.run(trainer, W, idx)
    W1, info = CentralizedSGD(trainer, make_streams("csgd"), steps, batch).round(problem.W0, 0)
    (idx,) = seen
    assert idx.shape == (1, steps, batch) and info["samples"] == steps * batch and info["updates"] == steps
    pool = set(problem.data.table.flatten().tolist())
    assert all(set(b.tolist()) <= pool for b in idx[0])
    assert not torch.equal(W1, problem.W0)


def test_fedcluster_lr_rule():
    assert fedcluster_lr(0.1, 10) == pytest.approx(0.01)
    assert fedcluster_lr(0.1, 10, "fixed") == 0.1
    assert fedcluster_lr(0.1, 20, "div_10") == pytest.approx(0.01) and fedcluster_lr(0.1, 20) == pytest.approx(0.005)
    with pytest.raises(ValueError, match="fc_lr_rule"):
        fedcluster_lr(0.1, 10, "sqrt")


def test_invalid_configurations_are_rejected():
    problem = make_problem("mlp")
    trainer = problem.trainer()
    streams = make_streams("invalid")
    with pytest.raises(ValueError, match="cluster_order"):
        FedCluster(trainer, CLUSTERS, streams, cluster_order="random")
    with pytest.raises(ValueError, match="disjoint"):
        FedCluster(trainer, torch.zeros(2, 3, dtype=torch.long), streams)
    with pytest.raises(ValueError, match="device ids"):
        FedCluster(trainer, torch.tensor([[0, N_DEVICES]]), streams)
    with pytest.raises(ValueError, match="backend"):
        problem.trainer(backend="threads")
    with pytest.raises(ValueError, match="batch"):
        problem.trainer(batch=problem.data.samples_per_device + 1)
    with pytest.raises(ValueError, match="local optimizer"):
        LocalOptimizer("rmsprop", 0.1)
    with pytest.raises(ValueError, match="sgd"):
        CentralizedSGD(problem.trainer("adam"), streams, 3, 4)
