"""Synchronous FedAvg on the simulated clock (paper Eqs (2)-(3); docs/papers/defedavg.md R11-R12).

Round t: the server draws n clients with replacement, the distinct ones download w^t (blocking),
train K steps from it and upload; the round lasts T_down + max_i K*T_iter,i + T_up and everyone
else idles. A client drawn twice trains once and its Delta weighs multiplicity/n (the proof's
multiset semantics, docs/papers/defedavg.md R12); ``fedavg_duplicates="independent"`` gives every draw its own
training (weight 1/n) on the same timing.
"""

from __future__ import annotations

import numpy as np

from fedrepro.asynchrony.context import SimContext
from fedrepro.asynchrony.trace import TIMELINE_KINDS
from fedrepro.sampling import sample_clients_np

TRAIN, UPLOAD, DOWNLOAD = (TIMELINE_KINDS.index(k) for k in ("train", "upload", "download"))
DUPLICATES = ("merge", "independent")  # fedavg_duplicates: a client drawn twice trains once, or once per draw


def simulate_fedavg(ctx: SimContext, *, fedavg_duplicates: str = "merge") -> np.ndarray:
    """Fills ctx.out; returns the number of trainings each client started."""
    n, K, out = ctx.n_per_round, ctx.local_steps, ctx.out
    T = np.asarray(ctx.training_time)
    up, down = ctx.upload_time, ctx.download_time
    trainings = np.zeros(ctx.n_clients, dtype=np.int64)
    start = 0.0
    while not ctx.finished():
        draws = sample_clients_np(ctx.sampling_rng, ctx.n_clients, n, replace=True)
        if fedavg_duplicates == "merge":
            clients, mult = np.unique(draws, return_counts=True)
        else:
            clients, mult = np.sort(draws), np.ones(n, dtype=np.int64)
        done = start + down + T[clients]
        close = float(done.max()) + up
        if close > ctx.horizon_time:
            break
        t = out.round
        for i, m, f in zip(clients.tolist(), mult.tolist(), done.tolist()):
            j = int(trainings[i])
            trainings[i] += 1
            out.consume(i, j, t, K, m / n)
            out.interval(i, DOWNLOAD, start, start + down)
            out.interval(i, TRAIN, start + down, f, j)
            out.interval(i, UPLOAD, f, f + up, j)
        out.close_round(close)
        start = close
    return trainings
