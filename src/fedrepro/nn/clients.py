"""Local training of the active clients of a cycle or round, on two backends.

The algorithm (minibatches, loss, optimizer) is defined once; the backends differ only in how many
clients a step covers:
- `loop`: one client at a time, plain autograd (the reference);
- `vectorized`: all D clients in lockstep over stacked parameters, one batched gradient and
  one optimizer update per local step.
Minibatches are drawn before training, per client from its own stream, so both backends see the
same batches and a client's batches do not depend on which other clients are active.

On CUDA the vectorized backend records a whole local run (E steps) once per shape as a CUDA graph and
replays it: at these model sizes a step is bound by kernel launches and Python dispatch, not by
the GPU (see benchmarks/bench_clients.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor, nn

from fedrepro.nn.flat import FlatModel
from fedrepro.nn.gradients import client_grad, stacked_grad
from fedrepro.nn.optim import LocalOptimizer

BACKENDS = ("loop", "vectorized")
Streams = Callable[..., torch.Generator]  # streams(purpose, rnd, client=None) -> a fresh generator


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
    """`steps` local steps of `opt` on minibatches of `batch` samples per client, from a common start."""

    def __init__(
        self,
        model: nn.Module,
        data: DeviceData,
        opt: LocalOptimizer,
        steps: int,
        batch: int,
        backend: str,
        cuda_graphs: bool = True,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
        if not 1 <= batch <= data.samples_per_device:
            raise ValueError(f"batch = {batch} must be in [1, {data.samples_per_device}] (samples per device)")
        if steps < 1:
            raise ValueError(f"steps = {steps} must be >= 1")
        self.flat = FlatModel(model)
        self.data, self.opt, self.steps, self.batch, self.backend = data, opt, steps, batch, backend
        self._stacked_grad = stacked_grad(self.flat)
        self.cuda_graphs = cuda_graphs
        self._graphs: dict[tuple, tuple] = {}

    def draw(self, streams: Streams, rnd: int, clients: Tensor) -> Tensor:
        """Pool indices (D, steps, batch) of the activated clients' minibatches in round `rnd`.

        Client k's come from streams("batches", rnd, k) alone (each device is active at most once a
        round): per step, `batch` distinct samples of its own, steps independent (spec §2.1 d).
        """
        n = self.data.samples_per_device
        local = []
        for k in clients.tolist():
            gen = streams("batches", rnd, k)
            local.append(torch.rand(self.steps, n, generator=gen, device=gen.device).argsort(-1)[:, : self.batch])
        table = self.data.table
        local = torch.stack(local).to(table.device).flatten(1)
        return torch.gather(table[clients.to(table.device)], 1, local).view(len(clients), self.steps, self.batch)

    def run(self, W: Tensor, idx: Tensor) -> Tensor:
        """Final parameters (D, P) of D clients that start from W (P,) and step through idx (D, E, B)."""
        if self.backend == "loop":
            return self._loop(W, idx)
        if self.cuda_graphs and W.is_cuda:
            return self._graphed(W, idx)
        return self._vectorized(W, idx)

    def _loop(self, W: Tensor, idx: Tensor) -> Tensor:
        finals = []
        for client_idx in idx:
            w = W.clone()
            state = self.opt.init(w)
            for t, (x, y) in enumerate(zip(*self._gather(client_idx))):
                self.opt.step(w, client_grad(self.flat, w, x, y), state, t, W)
            finals.append(w)
        return torch.stack(finals)

    def _vectorized(self, W: Tensor, idx: Tensor) -> Tensor:
        D = idx.shape[0]
        w = self.flat.stack(W, D)
        anchor = w.clone() if self.opt.name == "fedprox" else None  # W in the stack's layout
        state = self.opt.init(w)
        for t, (x, y) in enumerate(zip(*self._gather(idx.transpose(0, 1)))):  # step-major: x (D, B, ...)
            self.opt.step(w, self._stacked_grad(w, x, y), state, t, anchor)
        return self.flat.clients(w, D)

    def _graphed(self, W: Tensor, idx: Tensor) -> Tensor:
        """_vectorized replayed from a CUDA graph recorded for this (idx shape, dtype)."""
        key = (tuple(idx.shape), W.dtype)
        if key not in self._graphs:
            static_W, static_idx = W.clone(), idx.clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up outside the capture: lazy cuBLAS/cuDNN setup
                self._vectorized(static_W, static_idx)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = self._vectorized(static_W, static_idx)
            self._graphs[key] = (graph, static_W, static_idx, out)
        graph, static_W, static_idx, out = self._graphs[key]
        static_W.copy_(W)
        static_idx.copy_(idx)
        graph.replay()
        return out.clone()

    def _gather(self, b: Tensor) -> tuple[Tensor, Tensor]:
        """Images and labels at pool indices b (any shape), for all steps of a run at once (one op, not
        one per step); index_select is ~2x faster than images[b]."""
        images, labels = self.data.images, self.data.labels
        flat = b.reshape(-1)
        x = images.index_select(0, flat).view(*b.shape, *images.shape[1:])
        return x, labels.index_select(0, flat).view(b.shape)
