"""Local training of the active clients of a cycle or round, on two backends.

The algorithm (minibatches, loss, optimizer) is defined once; the backends differ only in how many
clients a step covers:
- `loop`: one client at a time, plain autograd (the reference);
- `vectorized`: all D clients in lockstep over stacked parameters, one batched gradient and
  one optimizer update per local step, in buffers reused across steps and runs.
Minibatches are drawn before training, per client from its own stream, so both backends see the
same batches and a client's batches do not depend on which other clients are active. Clients may
start from one common W or each from its own (e.g. stale server versions in asynchronous FL), and
the loss is injected (nn/losses.py), with optional per-sample inputs fixed during the run.

On CUDA the vectorized backend records a whole local run (E steps) once per shape as a CUDA graph and
replays it: at these model sizes a step is bound by kernel launches and Python dispatch, not by
the GPU (see benchmarks/bench_clients.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from fedrepro.nn.flat import FlatModel
from fedrepro.nn.gradients import client_grad, fused_sgd, stacked_grad
from fedrepro.nn.losses import CROSS_ENTROPY, Loss
from fedrepro.nn.optim import LocalOptimizer
from fedrepro.sampling import smallest_indices
from fedrepro.seeding import Streams

BACKENDS = ("loop", "vectorized")
# Where the vectorized backend beats the one-client loop on a CPU (benchmarks/bench_clients.py, 1 thread): the
# MLPs (closed-form gradients, 3-12x) and the small conv nets (grouped convolutions: cnn_tiny ~5x,
# cnn_defedavg_tiny ~2.5x, AlexNet ~1.4x). The 32/64-channel DeFedAvg CNN is compute-bound there and oneDNN's
# grouped kernels are slower than its plain ones (~0.9x), so it stays on the loop.
VECTORIZED_ON_CPU = frozenset({"mlp", "mlp2", "cnn_tiny", "cnn_defedavg_tiny", "alexnet", "cnn_s2"})


def client_backend(choice: str, model: str, device: str) -> str:
    """A run's `backend` setting as a backend: `auto` is the vectorized one on CUDA, and on the CPU for the models
    where it was measured faster than the loop (VECTORIZED_ON_CPU); else the loop."""
    if choice != "auto":
        return choice
    return "vectorized" if device.startswith("cuda") or model in VECTORIZED_ON_CPU else "loop"


@dataclass(frozen=True)
class DeviceData:
    """Training data of all devices, on the compute device (an image may sit on several devices)."""

    images: Tensor  # (n_pool, C, H, W) float
    labels: Tensor  # (n_pool,) long
    table: Tensor  # (n_devices, samples_per_device) long: device k holds images[table[k]]

    @property
    def n_devices(self) -> int:
        return self.table.shape[0]

    @property
    def samples_per_device(self) -> int:
        return self.table.shape[1]


class LocalTrainer:
    """Local steps of `opt` on minibatches of `batch` samples per client, minimising `loss`."""

    def __init__(
        self,
        model: nn.Module,
        data: DeviceData,
        opt: LocalOptimizer,
        steps: int,
        batch: int,
        backend: str,
        cuda_graphs: bool = True,
        loss: Loss = CROSS_ENTROPY,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
        if not 1 <= batch <= data.samples_per_device:
            raise ValueError(f"batch = {batch} must be in [1, {data.samples_per_device}] (samples per device)")
        if steps < 1:
            raise ValueError(f"steps = {steps} must be >= 1")
        self.flat = FlatModel(model)
        self.data, self.opt, self.steps, self.batch, self.backend = data, opt, steps, batch, backend
        self.loss = loss
        self._stacked_grad = stacked_grad(self.flat, loss)
        self._fused_sgd = fused_sgd(self.flat, loss, opt.lr) if opt.name == "sgd" else None
        self.cuda_graphs = cuda_graphs
        self._graphs: dict[tuple, tuple] = {}
        self._buffers: dict[str, Tensor] = {}

    def draw(self, streams: Streams, rnd: int | Sequence[int], clients: Tensor) -> Tensor:
        """Pool indices (D, steps, batch) of the activated clients' minibatches in round `rnd`.

        Client k's come from streams("batches", rnd, k) alone (each device is active at most once a
        round): per step, `batch` distinct samples of its own, steps independent (docs/papers/fedcluster.md R9).
        `rnd` may also be one index per client (asynchronous FL keys a training by the client's own
        count of trainings, not by a server round).
        """
        n = self.data.samples_per_device
        keys = [rnd] * len(clients) if isinstance(rnd, int) else list(rnd)
        if len(keys) != len(clients):
            raise ValueError(f"{len(keys)} stream indices for {len(clients)} clients")
        local = []
        for k, key in zip(clients.tolist(), keys):
            gen = streams("batches", key, k)
            local.append(smallest_indices(torch.rand(self.steps, n, generator=gen, device=gen.device), self.batch))
        table = self.data.table
        local = torch.stack(local).to(table.device).flatten(1)
        return torch.gather(table[clients.to(table.device)], 1, local).view(len(clients), self.steps, self.batch)

    def run(self, W: Tensor, idx: Tensor, extra: Sequence[Tensor] = ()) -> Tensor:
        """Final parameters (D, P) of D clients that step through the minibatches idx (D, E, B) of pool
        indices, from W (P,) (a common start) or W (D, P) (client d from W[d]; FedProx's anchor is
        each client's own start). `extra`: per-sample inputs of the loss, each (D, E, B, ...) aligned
        with idx (an expanded view is fine, e.g. inputs fixed over the E steps)."""
        D = idx.shape[0]
        if W.dim() == 2 and W.shape[0] != D:
            raise ValueError(f"W has {W.shape[0]} starts for {D} clients")
        extra = tuple(extra)
        if any(e.shape[:3] != idx.shape for e in extra):
            raise ValueError(f"extra inputs must be aligned with idx {tuple(idx.shape)}")
        if self.backend == "loop":
            return self._loop(W, idx, extra)
        if self.cuda_graphs and W.is_cuda:
            return self._graphed(W, idx, extra)
        return self._vectorized(W, idx, extra)

    def _loop(self, W: Tensor, idx: Tensor, extra: tuple[Tensor, ...]) -> Tensor:
        finals = []
        for d, client_idx in enumerate(idx):
            start = W if W.dim() == 1 else W[d]
            w = start.clone()
            state = self.opt.init(w)
            for t, (x, y) in enumerate(zip(*self._gather(client_idx))):
                g = client_grad(self.flat, self.loss, w, x, y, tuple(e[d, t] for e in extra))
                self.opt.step(w, g, state, t, start)
            finals.append(w)
        return torch.stack(finals)

    def _vectorized(self, W: Tensor, idx: Tensor, extra: tuple[Tensor, ...], fresh: bool = False) -> Tensor:
        D, _, B = idx.shape
        images = self.data.images
        w, g, *state = self._buffer("stacks", W, fresh, 2 + self.opt.n_state + self._fedprox, D * self.flat.n_params)
        x = self._buffer("images", images, fresh, D * B, *images.shape[1:])
        self.flat.stack(W, D, out=w)
        anchor = state.pop().copy_(w) if self._fedprox else None  # the starts, in the stack's layout
        state = self.opt.init(w, state)
        steps = idx.transpose(0, 1).contiguous()  # step-major (E, D, B)
        labels = self.data.labels[steps]
        for t, b in enumerate(steps):
            torch.index_select(images, 0, b.view(-1), out=x)  # ~2x faster than images[b]
            xt, e = x.view(D, B, *images.shape[1:]), tuple(a[:, t] for a in extra)
            if self._fused_sgd is not None:
                self._fused_sgd(w, xt, labels[t], e)
            else:
                self._stacked_grad(w, g, xt, labels[t], e)
                self.opt.step(w, g, state, t, anchor)
        return self.flat.clients(w, D)

    @property
    def _fedprox(self) -> bool:
        return self.opt.name == "fedprox"

    def _buffer(self, name: str, like: Tensor, fresh: bool, *shape: int) -> Tensor:
        """A tensor of `shape` reused across steps and runs: the prefix of one buffer per name, sized for
        the largest shape so far (a fresh one, not kept, for a CUDA graph, which owns its memory).
        A new D*P tensor per step costs as much time as the arithmetic (page faults)."""
        numel = math.prod(shape)
        buf = self._buffers.get(name)
        if fresh or buf is None or buf.numel() < numel or (buf.dtype, buf.device) != (like.dtype, like.device):
            buf = like.new_empty(numel)
            if not fresh:
                self._buffers[name] = buf
        return buf[:numel].view(shape)

    def _graphed(self, W: Tensor, idx: Tensor, extra: tuple[Tensor, ...]) -> Tensor:
        """_vectorized replayed from a CUDA graph recorded for these shapes and dtype; the graph owns its
        inputs (copied in before each replay, starts included) and its workspace."""
        key = (tuple(W.shape), tuple(idx.shape), tuple(tuple(e.shape) for e in extra), W.dtype)
        if key not in self._graphs:
            static = (W.clone(), idx.clone(), tuple(e.clone() for e in extra))
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up outside the capture: lazy cuBLAS/cuDNN setup
                self._vectorized(*static, fresh=True)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = self._vectorized(*static, fresh=True)
            self._graphs[key] = (graph, static, out)
        graph, (static_W, static_idx, static_extra), out = self._graphs[key]
        static_W.copy_(W)
        static_idx.copy_(idx)
        for static_e, e in zip(static_extra, extra):
            static_e.copy_(e)
        graph.replay()
        return out.clone()

    def _gather(self, b: Tensor) -> tuple[Tensor, Tensor]:
        """Images and labels at pool indices b (any shape), all steps of a client at once."""
        images, labels = self.data.images, self.data.labels
        flat = b.reshape(-1)
        x = images.index_select(0, flat).view(*b.shape, *images.shape[1:])
        return x, labels.index_select(0, flat).view(b.shape)
