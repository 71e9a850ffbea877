"""First-n-arrivals protocols: DeFedAvg-IID (Alg. 2), FedBuff with C = N, AsySG (docs/papers/defedavg.md
R15, R16, R18).

Every client cycles without waiting for the server: train K steps from the newest model in its
receive buffer, upload (it cannot compute meanwhile, docs/papers/defedavg.md R10), start again when the upload has
arrived. The server closes round t at the n-th arrival since the last close and broadcasts at that
instant; the (n+1)-th arrival belongs to round t+1, and a fast client may appear twice in a round
(docs/papers/defedavg.md R15). AsySG is this protocol with K = 1 (one gradient per upload). FedBuff is the same
schedule weighting each Delta by s(tau)/n, tau = t - start version (``fedbuff_staleness``).
"""

from __future__ import annotations

import math

import numpy as np

from fedrepro.asynchrony.context import SimContext
from fedrepro.asynchrony.events import UPLOAD_ARRIVAL, EventQueue, VersionClock
from fedrepro.asynchrony.trace import TIMELINE_KINDS

TRAIN, UPLOAD = TIMELINE_KINDS.index("train"), TIMELINE_KINDS.index("upload")

STALENESS_WEIGHTS = {
    "none": lambda tau: 1.0,
    "sqrt": lambda tau: 1.0 / math.sqrt(1.0 + tau),  # FedBuff's polynomial staleness scaling
}


def simulate_first_arrivals(ctx: SimContext, *, staleness_weight: str = "none") -> np.ndarray:
    """Fills ctx.out; returns the number of trainings each client started."""
    s = STALENESS_WEIGHTS[staleness_weight]
    n, K, out = ctx.n_per_round, ctx.local_steps, ctx.out
    T, up = ctx.training_time, ctx.upload_time
    clock = VersionClock(ctx.download_time)
    queue = EventQueue()
    start = [ctx.download_time] * ctx.n_clients  # w^0 lands at T_down (docs/papers/defedavg.md R22)
    trainings = [0] * ctx.n_clients
    for i in range(ctx.n_clients):
        queue.push(start[i] + T[i] + up, UPLOAD_ARRIVAL, i)
    timeline = out.records_timeline
    arrived = 0
    while len(queue) and not ctx.finished():
        time, _, i, _ = queue.pop()
        if time > ctx.horizon_time:
            break
        j = trainings[i]
        v = clock.version_at(start[i])
        out.consume(i, j, v, K, s(out.round - v) / n)
        if timeline:
            out.interval(i, TRAIN, start[i], time - up, j)
            out.interval(i, UPLOAD, time - up, time, j)
        arrived += 1
        if arrived == n:
            out.close_round(time)
            clock.broadcast(time)
            arrived = 0
        trainings[i] = j + 1
        start[i] = time
        queue.push(time + T[i] + up, UPLOAD_ARRIVAL, i)
    # the training each client has under way counts as started
    return np.asarray(trainings, dtype=np.int64) + 1
