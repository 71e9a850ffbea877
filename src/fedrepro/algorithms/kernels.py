"""The finite-sum algorithms' numeric backend: the minibatch rows of the sampled clients and their batched local
steps, each step in torch and, on the CPU, in a numpy twin that gives the same floats at a fraction of torch's
per-call overhead (test_fast_paths.py proves each twin equal to its torch version, bit for bit).

The algorithms (fedavg.py, scaffold.py, fedpage.py) call `local_sgd` and `local_page_steps` and read rows through
`ShardRows`; which version runs and how the rows are laid out in memory is decided here, never there.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from fedrepro.objectives import FiniteSumProblem
from fedrepro.sampling import smallest_indices

StepRows = Callable[[int], tuple[Tensor, Tensor]]  # k -> minibatch rows (S,B,d), (S,B) of local step k

# Minibatch rows of all local steps above this size are gathered step by step into one reused buffer,
# which stays in the core's L2 cache (2 MB here) for the two matmuls of its step; gathered all at once
# (12.8 MB for SCAFFOLD/FedAvg with b = 652, K = 10, S = 2 on a9a) they stream through L3 twice.
STEP_GATHER_BYTES = 1 << 20


def minibatches(gen: torch.Generator, A: Tensor, b: Tensor, steps: int, size: int) -> tuple[Tensor, Tensor]:
    """Rows of `steps` fresh minibatches for each client shard A (S,M,d), b (S,M).

    Returns (steps,S,size,d) and (steps,S,size). Each minibatch is `size` distinct indices drawn
    uniformly from [M], independently per (step, client); all drawn in one call. With size == M the
    minibatch is the whole shard, so nothing is drawn and no rows are copied.
    """
    S, M = b.shape
    if size == M:
        return A.expand(steps, *A.shape), b.expand(steps, *b.shape)
    idx = draw_indices(gen, steps, S, M, size)
    rows = torch.arange(S, device=A.device).unsqueeze(-1)
    return A[rows, idx], b[rows, idx]


def draw_indices(gen: torch.Generator, steps: int, S: int, M: int, size: int) -> Tensor:
    """(steps,S,size) minibatch indices in [M]: the first `size` entries of the argsort of a
    uniform (steps,S,M) draw, i.e. a uniformly random ordered sample without replacement."""
    return smallest_indices(torch.rand(steps, S, M, generator=gen, device=gen.device), size)


class ShardRows:
    """Client shards and minibatch rows read straight from the problem's (N,M,d) rows.

    Same values and same layout as `problem.A[clients]` and `minibatches(gen, problem.A[clients], ...)`:
    the rows are gathered once from the flat (N*M,d) matrix (no intermediate (S,M,d) copy) into a
    contiguous 64-byte aligned tensor, like the copy it replaces (BLAS results may depend on alignment).
    Minibatch rows go to a buffer kept per `slot` and reused by the next call for that slot, so large
    gathers do not fault in fresh pages every round: use the rows before asking for the slot again.
    A single client's shard is a view when it is 64-byte aligned, else an aligned copy kept for the next
    rounds that sample that client (FedPAGE with S = 1 on 10 clients: a 3.2 MB copy in 3 rounds of 4 on
    a9a; at most one copy of A in all).
    """

    def __init__(self, problem: FiniteSumProblem) -> None:
        N, M, d = problem.A.shape
        self.A, self.b, self.M, self.d = problem.A, problem.b, M, d
        self._A_flat = problem.A.reshape(N * M, d)
        self._b_flat = problem.b.reshape(N * M)
        self._buffers: dict[str, tuple[Tensor, Tensor]] = {}
        self._aligned_shards: dict[int, tuple[Tensor, Tensor]] = {}

    def shards(self, clients: Tensor) -> tuple[Tensor, Tensor]:
        """problem.A[clients], problem.b[clients]: (S,M,d), (S,M). Read only."""
        if len(clients) == 1 and self.A.is_contiguous():
            c = int(clients[0])
            A = self.A[c:c + 1]
            if A.data_ptr() % 64 == 0:
                return A, self.b[c:c + 1]
            if c not in self._aligned_shards:  # fresh tensors start 64-byte aligned, like index_select's
                self._aligned_shards[c] = (A.clone(), self.b[c:c + 1].clone())
            return self._aligned_shards[c]
        return self.A.index_select(0, clients), self.b.index_select(0, clients)

    def minibatches(
        self, gen: torch.Generator, clients: Tensor, steps: int, size: int, slot: str = "rows"
    ) -> tuple[Tensor, Tensor]:
        """minibatches(gen, problem.A[clients], problem.b[clients], steps, size): same draws, same rows."""
        S, M, d = len(clients), self.M, self.d
        if size == M:
            A, b = self.shards(clients)
            return A.expand(steps, *A.shape), b.expand(steps, *b.shape)
        idx = draw_indices(gen, steps, S, M, size)
        flat = (clients.unsqueeze(-1) * M + idx).reshape(-1)
        A, b = self._buffer(slot, (steps, S, size))
        torch.index_select(self._A_flat, 0, flat, out=A.view(-1, d))
        torch.index_select(self._b_flat, 0, flat, out=b.view(-1))
        return A, b

    def minibatch_steps(self, gen: torch.Generator, clients: Tensor, steps: int, size: int) -> StepRows:
        """step(k) = the rows of step k of minibatches(gen, clients, steps, size): the same draws (all made
        now, in one call) and the same rows in the same layout. Rows of all steps larger than
        STEP_GATHER_BYTES are gathered only when step(k) is called, into one buffer reused by every step,
        at the address modulo 64 bytes that step k's rows have in the all-steps buffer (BLAS results may
        depend on alignment): use a step's rows before asking for the next."""
        S, M, d = len(clients), self.M, self.d
        if size == M or steps * S * size * d * self.A.element_size() <= STEP_GATHER_BYTES:
            A, b = self.minibatches(gen, clients, steps, size)
            return lambda k: (A[k], b[k])
        idx = draw_indices(gen, steps, S, M, size)
        flat = (clients.unsqueeze(-1) * M + idx).reshape(steps, S * size)
        n = S * size
        line_A, line_b = 64 // self.A.element_size(), 64 // self.b.element_size()  # elements in 64 bytes
        buf = self._buffers.get("step")
        if buf is None or buf[1].numel() != n + line_b:  # fresh tensors start 64-byte aligned
            buf = (self.A.new_empty(n * d + line_A), self.b.new_empty(n + line_b))
            self._buffers["step"] = buf
        A_buf, b_buf = buf

        def step(k: int) -> tuple[Tensor, Tensor]:
            a0, b0 = k * n * d % line_A, k * n % line_b  # where step k starts in the all-steps buffer
            A, b = A_buf[a0:a0 + n * d].view(S, size, d), b_buf[b0:b0 + n].view(S, size)
            torch.index_select(self._A_flat, 0, flat[k], out=A.view(n, d))
            torch.index_select(self._b_flat, 0, flat[k], out=b.view(n))
            return A, b

        return step

    def _buffer(self, slot: str, shape: tuple[int, int, int]) -> tuple[Tensor, Tensor]:
        buf = self._buffers.get(slot)
        if buf is None or buf[1].shape != shape:
            buf = (self.A.new_empty(*shape, self.d), self.b.new_empty(shape))
            self._buffers[slot] = buf
        return buf


def local_sgd(
    problem: FiniteSumProblem,
    x: Tensor,
    clients: Tensor,
    gen: torch.Generator,
    K: int,
    eta_l: float,
    batch: int,
    correction: Tensor | None = None,
    rows: ShardRows | None = None,
) -> Tensor:
    """K local minibatch SGD steps from x on each client: y <- y - eta_l (grad_B f_i(y) + correction).

    Returns the final local models (S,d). correction (S,d) is SCAFFOLD's c - c_i; None for FedAvg.
    """
    rows = rows or ShardRows(problem)
    if x.device.type != "cpu":  # numpy needs host memory
        A, b = rows.minibatches(gen, clients, K, batch)
        return sgd_steps_torch(problem, x, A, b, eta_l, correction)
    return sgd_steps_numpy(problem, x, rows.minibatch_steps(gen, clients, K, batch), K, eta_l, correction)


def sgd_steps_torch(
    problem: FiniteSumProblem, x: Tensor, A: Tensor, b: Tensor, eta_l: float, correction: Tensor | None
) -> Tensor:
    """The local steps of `local_sgd` on the minibatch rows A (K,S,B,d), b (K,S,B), in torch."""
    b = b.unsqueeze(-1)
    y = x.expand(A.shape[1], -1)
    for k in range(len(A)):
        g = problem.batched_rows_grad(y, A[k], b[k])
        if correction is not None:
            g = g + correction
        y = y - eta_l * g
    return y


def sgd_steps_numpy(
    problem: FiniteSumProblem, x: Tensor, rows: StepRows, K: int, eta_l: float, correction: Tensor | None
) -> Tensor:
    """sgd_steps_torch on the minibatch rows rows(k) of step k = 0..K-1, with the arithmetic on these small
    arrays in numpy and the matmuls in torch, on 64-byte aligned buffers of the layouts `rows_grad` gives
    them: the same floats (see FiniteSumProblem.dloss_np) at a fraction of torch's per-call overhead.
    CPU tensors only."""
    A, b = rows(0)
    S, B, _ = A.shape
    d = x.shape[-1]
    new = functools.partial(torch.empty, dtype=x.dtype)
    y_t, u, coef, grad = new(S, d), new(S, B, 1), new(S, 1, B), new(S, 1, d)
    y, coef_np, grad_np, u_np = y_t.numpy(), coef.numpy().reshape(S, B, 1), grad.numpy().reshape(S, d), u.numpy()
    corr = None if correction is None else correction.numpy()
    y_k = x.numpy()  # y_0 = x on every client
    point, y_col = x.expand(S, -1).unsqueeze(-1), y_t.unsqueeze(-1)  # the matmul's operand: x, then y_t
    for k in range(K):
        if k:
            A, b = rows(k)
        torch.bmm(A, point, out=u)
        np.multiply(problem.dloss_np(u_np, b.numpy()[..., None]), 1.0 / B, out=coef_np)
        torch.bmm(coef, A, out=grad)
        r = problem.reg_grad_np(y_k)
        g = grad_np if r is None else grad_np + r
        if corr is not None:
            g = g + corr
        np.subtract(y_k, eta_l * g, out=y)
        y_k, point = y, y_col
    return y_t


def local_page_steps(
    prob: FiniteSumProblem, x: Tensor, g_loc: Tensor, A: Tensor, b: Tensor, eta_l: float
) -> Tensor:
    """Lines 18-23 from the first local estimators g_loc (S,d) at x: K-1 = len(A) recursive steps on
    the minibatch rows A (K-1,S,B,d), b (K-1,S,B); returns the sum of the K local estimators (S,d).

    Per step and client: y_prev, y <- y, y - eta_l g_loc; g_loc <- grad_B f_i(y) - grad_B f_i(y_prev) + g_loc.
    On the CPU the numpy version runs (numpy needs host memory); both give the same floats.
    """
    steps = page_steps_numpy if x.device.type == "cpu" else page_steps_torch
    return steps(prob, x, g_loc, A, b, eta_l)


def page_steps_torch(prob: FiniteSumProblem, x: Tensor, g_loc: Tensor, A: Tensor, b: Tensor, eta_l: float) -> Tensor:
    """local_page_steps in torch."""
    b = b.unsqueeze(-1)
    g_sum = g_loc
    y_prev, y = x.expand_as(g_loc), x - eta_l * g_loc
    r_prev = prob.reg_grad(x)
    for k in range(len(A)):
        diff, r_prev = prob.batched_rows_grad_diff(y, y_prev, A[k], b[k], r_prev)
        g_loc = diff + g_loc
        g_sum = g_sum + g_loc
        y_prev, y = y, y - eta_l * g_loc
    return g_sum


def page_steps_numpy(prob: FiniteSumProblem, x: Tensor, g_loc: Tensor, A: Tensor, b: Tensor, eta_l: float) -> Tensor:
    """local_page_steps with the arithmetic on these small arrays in numpy (the same IEEE operations in the
    same order as `rows_grad_diff`; see FiniteSumProblem.dloss_np) and the two matmuls per step in torch,
    on 64-byte aligned buffers of the layout `rows_grad_diff` gives them ((S,d,2) stacked points): the
    same floats as page_steps_torch at a fraction of its per-call overhead. CPU tensors only."""
    S, d = g_loc.shape
    B = b.shape[-1]
    new = functools.partial(torch.empty, dtype=g_loc.dtype)
    points = (new(S, d, 2), new(S, d, 2))  # (y, y_prev) stacked, as torch.stack((y, y_prev), -1)
    u, coef, grad = new(S, B, 2), new(S, 1, B), new(S, 1, d)
    coef_np, grad_np = coef.numpy().reshape(S, B), grad.numpy().reshape(S, d)
    b_np = b.numpy()
    x_np = x.numpy()
    g_sum_t = g_loc.clone()
    g_sum, g = g_sum_t.numpy(), g_loc.numpy()
    points_np = tuple(p.numpy() for p in points)
    u_np, b_np = u.numpy(), b_np[..., None]
    y = points_np[0]
    np.subtract(x_np, eta_l * g, out=y[..., 0])  # line 18
    y[..., 1] = x_np
    r_prev = prob.reg_grad_np(x_np)
    steps = len(A)
    for k in range(steps):
        A_k = A[k]
        torch.bmm(A_k, points[k % 2], out=u)
        c = prob.dloss_np(u_np, b_np[k])
        np.multiply(c[..., 0] - c[..., 1], 1.0 / B, out=coef_np)
        torch.bmm(coef, A_k, out=grad)
        y_k = y[..., 0]
        r = prob.reg_grad_np(y_k)
        diff = grad_np if r is None else grad_np + (r - r_prev)
        g = diff + g
        np.add(g_sum, g, out=g_sum)
        if k + 1 < steps:
            y = points_np[(k + 1) % 2]
            np.subtract(y_k, eta_l * g, out=y[..., 0])
            y[..., 1] = y_k
            r_prev = r
    return g_sum_t
