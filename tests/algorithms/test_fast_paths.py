"""The shortcuts of the finite-sum algorithms give the same numbers as the plain operations they replace."""

from __future__ import annotations

import pytest
import torch

from fedrepro.algorithms.kernels import ShardRows, minibatches
from fedrepro.sampling import smallest_indices


# the last two: the client layer's minibatches (10 of a client's 600 or 500 samples)
@pytest.mark.parametrize(("shape", "k"), [((10, 2, 3250), 652), ((19, 1, 4800), 1), ((9, 3, 100), 22), ((4, 3, 200), 199),
                                          ((20, 600), 10), ((5, 500), 10)])
def test_smallest_indices_is_argsort_prefix_including_ties(shape, k):
    gen = torch.Generator().manual_seed(0)
    for levels in (None, 2000, 300):  # float32 draws, then coarse grids: many ties, also at the top
        for _ in range(20):
            r = torch.rand(*shape, generator=gen)
            if levels:
                r = (r * levels).floor() / levels
            assert torch.equal(smallest_indices(r, k), r.argsort(dim=-1)[..., :k])


@pytest.mark.parametrize("size", [1, 3, 10])
def test_shard_rows_match_gathered_minibatches(problem, size):
    M = problem.samples_per_client
    rows = ShardRows(problem)
    for seed in range(5):
        clients = torch.randperm(problem.n_clients, generator=torch.Generator().manual_seed(seed))[:4]
        want = minibatches(torch.Generator().manual_seed(seed), problem.A[clients], problem.b[clients], 3, min(size, M))
        got = rows.minibatches(torch.Generator().manual_seed(seed), clients, 3, min(size, M))
        assert all(torch.equal(w, g) and w.stride() == g.stride() for w, g in zip(want, got))


@pytest.mark.parametrize("per_step", [False, True])
def test_minibatch_steps_are_the_gathered_minibatches(problem, monkeypatch, per_step):
    """Step by step (rows gathered when asked for, into one reused buffer) or all at once: the same
    draws and the same rows, layout and 64-byte alignment as `minibatches`."""
    from fedrepro.algorithms import kernels

    monkeypatch.setattr(kernels, "STEP_GATHER_BYTES", 0 if per_step else 1 << 40)
    size = min(3, problem.samples_per_client - 1)
    rows = ShardRows(problem)
    for seed in range(3):
        clients = torch.randperm(problem.n_clients, generator=torch.Generator().manual_seed(seed))[:4]
        A, b = rows.minibatches(torch.Generator().manual_seed(seed), clients, 5, size, slot="want")
        step = rows.minibatch_steps(torch.Generator().manual_seed(seed), clients, 5, size)
        storages = set()
        for k in range(5):
            A_k, b_k = step(k)
            assert torch.equal(A_k, A[k]) and torch.equal(b_k, b[k]) and A_k.stride() == A[k].stride()
            assert (A_k.data_ptr() % 64, b_k.data_ptr() % 64) == (A[k].data_ptr() % 64, b[k].data_ptr() % 64)
            storages.add(A_k.untyped_storage().data_ptr())
        assert storages.isdisjoint({A.untyped_storage().data_ptr()})
        assert len(storages) == 1  # one buffer for all steps


def test_single_client_shards_are_aligned_and_equal(problem):
    """One client's shard is problem.A[[c]], 64-byte aligned (a view, or a copy kept for the next time)."""
    rows = ShardRows(problem)
    unaligned = 0
    for c in range(problem.n_clients):
        clients = torch.tensor([c])
        A, b = rows.shards(clients)
        assert torch.equal(A, problem.A[clients]) and torch.equal(b, problem.b[clients]) and A.is_contiguous()
        assert A.data_ptr() % 64 == 0
        unaligned += A.data_ptr() != problem.A[c].data_ptr()
        assert rows.shards(clients)[0].data_ptr() == A.data_ptr()  # the copy is made once
    assert unaligned > 0  # the test data has shards at unaligned offsets: the copy path ran


def test_evaluate_matches_full_grad_and_value(problem):
    x = torch.linspace(-1, 1, problem.dim, dtype=torch.float64)
    grad_norm, loss = problem.evaluate(x)
    fresh = type(problem).__new__(type(problem))
    fresh.__dict__.update(problem.__dict__, _dot_memo=None, _grad_memo=None)
    assert grad_norm == float(fresh.full_grad(x).norm()) and loss == fresh.value(x)
    x.add_(1.0)  # in place: the memo must not answer for the modified x
    assert problem.full_grad(x).equal(fresh.full_grad(x.clone()))


@pytest.mark.parametrize("batch", [1, 3])
def test_numpy_local_steps_give_the_torch_loops_floats(problem, batch):
    """The CPU runs the numpy versions; other devices the torch loops. Both must agree bit for bit."""
    from fedrepro.algorithms.kernels import page_steps_numpy, page_steps_torch, sgd_steps_numpy, sgd_steps_torch

    gen = torch.Generator().manual_seed(3)
    clients = torch.randperm(problem.n_clients, generator=gen)[:4]
    A, b = ShardRows(problem).minibatches(gen, clients, 5, min(batch, problem.samples_per_client))
    x = torch.randn(problem.dim, generator=gen, dtype=torch.float64)
    correction = torch.randn(4, problem.dim, generator=gen, dtype=torch.float64)
    for c in (None, correction):
        numpy_steps = sgd_steps_numpy(problem, x, lambda k: (A[k], b[k]), len(A), 0.3, c)
        assert torch.equal(numpy_steps, sgd_steps_torch(problem, x, A, b, 0.3, c))
    g_loc = torch.randn(4, problem.dim, generator=gen, dtype=torch.float64)
    assert torch.equal(page_steps_numpy(problem, x, g_loc, A, b, 0.3), page_steps_torch(problem, x, g_loc, A, b, 0.3))
