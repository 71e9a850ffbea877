"""FAVANO on the simulated clock, as we read [33] (low confidence: docs/papers/defedavg.md R17).

The server runs on its own period: round r starts at s_r = T_down + r * (T_up + T_down + P_wait)
(``favano_period_wait_s`` = P_wait, 0 by default, so communication alone sets the pace). It picks
n clients without replacement and interrupts them: client i uploads the progress of the
q_i = min(K, floor(elapsed / T_iter,i)) steps it made since it last restarted (a client that
reached K steps idles), the server aggregates at s_r + T_up, and the new model reaches the picked
clients at s_r + T_up + T_down, when they restart (blocking download). Clients not picked keep
training from their last model. Weight 1/n (``favano_reweight="none"``), or K/q_i/n
(``"k_over_q"``: progress scaled to a K-step equivalent; a client with q_i = 0 then adds nothing).
Round 0 starts when w^0 lands, so its clients have made no progress yet (q = 0): R17's formula.
"""

from __future__ import annotations

import numpy as np

from fedrepro.asynchrony.context import SimContext
from fedrepro.asynchrony.trace import TIMELINE_KINDS
from fedrepro.errors import ConfigError
from fedrepro.sampling import sample_clients_np

TRAIN, UPLOAD, DOWNLOAD = (TIMELINE_KINDS.index(k) for k in ("train", "upload", "download"))
REWEIGHTS = ("none", "k_over_q")
_FLOOR_SLACK = 1e-9  # elapsed / T_iter that is an integer up to rounding still counts the last step


def simulate_favano(ctx: SimContext, *, favano_period_wait_s: float = 0.0, favano_reweight: str = "none") -> np.ndarray:
    """Fills ctx.out; returns the number of trainings each client started."""
    N, n, K, out = ctx.n_clients, ctx.n_per_round, ctx.local_steps, ctx.out
    it = np.asarray(ctx.iteration_time)
    up, down = ctx.upload_time, ctx.download_time
    period = up + down + float(favano_period_wait_s)
    if period <= 0 and not np.isfinite(ctx.max_rounds):
        raise ConfigError("FAVANO with no communication time and favano_period_wait_s = 0 never advances the "
                          "clock: give favano_period_wait_s > 0 or simulate a number of rounds")
    started = np.full(N, down)  # when each client last (re)started training
    version = np.zeros(N, dtype=np.int64)
    trainings = np.zeros(N, dtype=np.int64)
    while not ctx.finished():
        r = out.round
        s = down + r * period
        if s + up > ctx.horizon_time:
            break
        picked = np.sort(sample_clients_np(ctx.sampling_rng, N, n, replace=False))
        steps = np.minimum(K, np.floor((s - started[picked]) / it[picked] + _FLOOR_SLACK)).astype(np.int64)
        steps = np.maximum(steps, 0)
        if favano_reweight == "k_over_q":
            weight = np.divide(K, steps, out=np.zeros(n), where=steps > 0) / n
        else:
            weight = np.full(n, 1.0 / n)
        for i, q, w in zip(picked.tolist(), steps.tolist(), weight.tolist()):
            j = int(trainings[i])
            out.consume(i, j, int(version[i]), q, w)
            out.interval(i, TRAIN, float(started[i]), min(float(started[i]) + K * float(it[i]), s), j)
            out.interval(i, UPLOAD, s, s + up, j)
            out.interval(i, DOWNLOAD, s + up, s + up + down)
        trainings[picked] += 1
        started[picked] = s + up + down
        version[picked] = r + 1
        out.close_round(s + up)
    return trainings + 1  # every client has one training under way (or finished and idle)
