"""DeFedAvg-nIID (Alg. 1): uniform sampling with replacement from clients that train continuously
into a one-slot send buffer (paper §2.1, §2.3; docs/papers/defedavg.md R13).

Round t starts when round t-1 closes. The server draws n clients with replacement; each distinct
client uploads what its send buffer holds at once, or, when the buffer is empty, the training it has
under way as soon as that finishes (the server waits). The round closes when the last of these
uploads arrives; w^{t+1} then goes to every receive buffer. A Delta weighs multiplicity/n.

Choices (config):
- ``niid_send_buffer="continuous"`` (default): a finished training overwrites the buffer and the
  next one starts at once from the newest received model; an overwritten training is never
  computed by the learning phase (no record) but has cost its time.
  ``"energy_limited"`` (paper Sec. 2.3): after a training the client holds its Delta and idles
  until sampled; it then uploads and starts a new training once the upload is done.
- ``niid_upload_pauses_training=True`` (default): a client is one sequential resource, so an
  upload from the buffer delays the training under way by T_up; False lets them overlap.
- A client the server waits for uploads at the end of its training and starts the next one when
  the upload has arrived (docs/papers/defedavg.md R10).
"""

from __future__ import annotations

import numpy as np

from fedrepro.asynchrony.context import SimContext
from fedrepro.asynchrony.events import ROUND_START, TRAIN_DONE, UPLOAD_ARRIVAL, EventQueue, VersionClock
from fedrepro.asynchrony.trace import TIMELINE_KINDS
from fedrepro.sampling import sample_clients_np

TRAIN, UPLOAD = TIMELINE_KINDS.index("train"), TIMELINE_KINDS.index("upload")
SEND_BUFFER_MODES = ("continuous", "energy_limited")
IDLE = -1.0  # done[i] of a client that holds its Delta and waits (energy-limited mode)


def simulate_send_buffers(
    ctx: SimContext, *, niid_send_buffer: str = "continuous", niid_upload_pauses_training: bool = True
) -> np.ndarray:
    """Fills ctx.out; returns the number of trainings each client started."""
    N, n, K, out = ctx.n_clients, ctx.n_per_round, ctx.local_steps, ctx.out
    T, up = ctx.training_time, ctx.upload_time
    energy_limited = niid_send_buffer == "energy_limited"
    timeline = out.records_timeline
    clock = VersionClock(ctx.download_time)
    queue = EventQueue()

    # The training under way: index, start time, finish time (IDLE when there is none), and a token
    # that tells a rescheduled finish from the stale one still in the queue.
    current = [0] * N
    started = [ctx.download_time] * N
    done = [ctx.download_time + T[i] for i in range(N)]
    token = [0] * N
    segment = list(started)  # start of the running stretch of training, for the timeline
    buffered = [-1] * N  # training index held in the send buffer, -1 when empty
    buffered_start = [0.0] * N
    awaited = [0] * N  # multiplicity of a client the current round waits for
    pending = 0  # uploads the current round still waits for

    for i in range(N):
        queue.push(done[i], TRAIN_DONE, i)
    queue.push(0.0, ROUND_START, -1)

    def begin(i: int, time: float) -> None:
        current[i] += 1
        started[i] = segment[i] = time
        done[i] = time + T[i]
        token[i] += 1
        queue.push(done[i], TRAIN_DONE, i, token[i])

    while len(queue) and not ctx.finished():
        time, kind, i, tok = queue.pop()
        if time > ctx.horizon_time:
            break
        if kind == UPLOAD_ARRIVAL:
            pending -= 1
            if pending == 0:
                out.close_round(time)
                clock.broadcast(time)
                queue.push(time, ROUND_START, -1)
        elif kind == TRAIN_DONE:
            if tok != token[i]:
                continue  # rescheduled by a pause
            j = current[i]
            if timeline:
                out.interval(i, TRAIN, segment[i], time, j)
            if awaited[i]:
                out.consume(i, j, clock.version_at(started[i]), K, awaited[i] / n)
                awaited[i] = 0
                out.interval(i, UPLOAD, time, time + up, j)
                queue.push(time + up, UPLOAD_ARRIVAL, i)
                begin(i, time + up)
            else:
                buffered[i], buffered_start[i] = j, started[i]  # overwrites an unsent Delta
                if energy_limited:
                    done[i] = IDLE
                else:
                    begin(i, time)
        else:  # ROUND_START
            draws = sample_clients_np(ctx.sampling_rng, N, n, replace=True)
            clients, mult = np.unique(draws, return_counts=True)
            for i, m in zip(clients.tolist(), mult.tolist()):
                pending += 1
                if buffered[i] < 0:
                    awaited[i] = m
                    continue
                j = buffered[i]
                out.consume(i, j, clock.version_at(buffered_start[i]), K, m / n)
                buffered[i] = -1
                out.interval(i, UPLOAD, time, time + up, j)
                queue.push(time + up, UPLOAD_ARRIVAL, i)
                if done[i] == IDLE:
                    begin(i, time + up)
                elif niid_upload_pauses_training and done[i] > time:
                    if timeline:
                        out.interval(i, TRAIN, segment[i], time, current[i])
                    segment[i] = time + up
                    done[i] += up
                    token[i] += 1
                    queue.push(done[i], TRAIN_DONE, i, token[i])
    return np.asarray(current, dtype=np.int64) + 1  # trainings 0..current[i] have started
