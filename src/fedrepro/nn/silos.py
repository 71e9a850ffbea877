"""The clients of one silo in vertically partitioned FL (TDCD, paper §3, Algorithm 1), on two backends.

A silo holds one feature block X_j of every sample ID; its K clients each own some IDs and a copy of the
silo's network h_j. In a round they all train on the round's minibatch, each on the IDs it owns, with
the loss of Eq. 4: the mean over its own IDs of l(h_j(x_p) + Phi_other[p], y_p), where Phi_other (the
sum of the other silos' embeddings, stale within the round) is a per-sample input fixed during the round
(an injected loss, nn/losses.py).

- `vectorized`: the K clients as one computation: parameters stacked (K*P,) as the client layer's
  FlatModel does; the round's samples as a padded (K, max_count) tensor with a 0/1 mask scaled so that
  the padded mean is each client's masked sum / max(count, 1) (an empty client gets a zero gradient, so
  its step changes nothing, as skipping it); gradients from the client layer's stacked_grad (closed form
  for plain MLPs, grouped convolutions for small conv nets on the CPU, vmap(grad) for anything else,
  e.g. the LSTM). A model with BatchNorm takes nn/batchnorm_silo.py's BatchNormSilo: vmap over whole client
  states, each BatchNorm over the client's own samples.
- `loop`: one client at a time, plain autograd, each client with its own copy of the whole floating
  state, BatchNorm running statistics included (the reference, and the paper scale's ResNets).
A silo's state is one flat vector, parameters then floating buffers (StateLayout); for a model without
buffers that is exactly FlatModel's vector, so both backends share hub states.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call

from fedrepro.nn.flat import FlatModel
from fedrepro.nn.gradients import fused_sgd, stacked_grad
from fedrepro.nn.losses import CROSS_ENTROPY, Loss

SILO_BACKENDS = ("loop", "vectorized")


def silo_backend(choice: str, has_buffers: bool) -> str:
    """A run's `backend` setting as a silo backend: `auto` is vectorized for models without buffers, the loop for
    the BatchNorm ResNets, whose vectorized silo (nn/batchnorm_silo.py) is chosen only by name until it is measured
    faster on a GPU (docs/performance.md); choosing it changes the floats, not the arithmetic."""
    if choice == "auto":
        return "loop" if has_buffers else "vectorized"
    return choice


def sample_losses(logits: Tensor, y: Tensor) -> Tensor:
    """Per-sample losses (..., B) of fused logits (..., B, out): BCE with logits for one output (y in
    {0, 1}), else cross-entropy."""
    if logits.shape[-1] == 1:
        return F.binary_cross_entropy_with_logits(logits[..., 0], y.to(logits.dtype), reduction="none")
    return CROSS_ENTROPY.samples(logits, y)


class FusedLoss(Loss):
    """A silo client's per-sample loss: l(own output + other silos' embeddings, y) x weight, the weight
    being 1 (loop) or the mask scaled by max_count / max(count, 1) (vectorized)."""

    def samples(self, out: Tensor, y: Tensor, *extra: Tensor) -> Tensor:
        phi_other, weight = extra
        return sample_losses(out + phi_other, y) * weight


FUSED_LOSS = FusedLoss()


class StateLayout:
    """A module's floating state as one flat vector: its parameters (named_parameters order), then its
    floating buffers (BatchNorm running mean and variance). Integer buffers (BatchNorm's batch counter,
    unused with a set momentum) stay the module's own."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        self.params = [(n, tuple(p.shape)) for n, p in module.named_parameters()]
        self.buffers = [(n, tuple(b.shape)) for n, b in module.named_buffers() if b.is_floating_point()]
        self.numels = [math.prod(s) for _, s in self.params + self.buffers]
        self.n_params = sum(self.numels[: len(self.params)])
        self.size = sum(self.numels)

    @property
    def has_buffers(self) -> bool:
        return bool(self.buffers)

    def flatten(self) -> Tensor:
        """The module's current state as a new (S,) tensor."""
        tensors = [p.detach() for _, p in self.module.named_parameters()]
        tensors += [b for _, b in self.module.named_buffers() if b.is_floating_point()]
        return torch.cat([t.reshape(-1) for t in tensors])

    def views(self, s: Tensor, params: Tensor | None = None) -> dict[str, Tensor]:
        """Views of a state s (S,) by name, or of stacked states (K, S) as (K, *shape) each; the parameters from
        `params` (P,) instead when given (a leaf to differentiate), the buffers always from s (BatchNorm in train
        mode updates them in place)."""
        parts = torch.split(s, self.numels, dim=-1)
        if params is not None:
            parts = (*torch.split(params, self.numels[: len(self.params)], dim=-1), *parts[len(self.params):])
        lead = s.shape[:-1]
        return {n: p.view(*lead, *shape) for (n, shape), p in zip(self.params + self.buffers, parts)}

    def forward(self, s: Tensor, x: Tensor, train: bool) -> Tensor:
        """The module's output on x with state s, without gradients (train mode updates s's running
        statistics, as a client's own forward does)."""
        self.module.train(train)
        with torch.no_grad():
            return functional_call(self.module, self.views(s), (x,))

    def grad(self, s: Tensor, x: Tensor, y: Tensor, extra: tuple[Tensor, ...], loss: Loss) -> Tensor:
        """d loss / d parameters (P,) at state s, in train mode."""
        self.module.train(True)
        leaf = s[: self.n_params].detach().requires_grad_(True)
        with torch.enable_grad():
            out = functional_call(self.module, self.views(s, leaf), (x,))
            (g,) = torch.autograd.grad(loss.value(out, y, *extra), leaf)
        return g


def client_slots(clients: Tensor, K: int) -> tuple[Tensor, Tensor, Tensor]:
    """The batch positions each of K clients owns, padded: (positions (K, width), mask (K, width) bool,
    counts (K,)), width = max(1, the largest count), positions in batch order, padding 0 (masked).
    `clients` (B,): the owning client of each batch position."""
    counts = torch.bincount(clients, minlength=K)
    width = max(1, int(counts.max()))
    order = torch.argsort(clients, stable=True)
    starts = torch.cumsum(counts, 0) - counts
    sorted_clients = clients[order]
    slot = torch.arange(len(clients), device=clients.device) - starts[sorted_clients]
    positions = torch.zeros(K, width, dtype=torch.long, device=clients.device)
    mask = torch.zeros(K, width, dtype=torch.bool, device=clients.device)
    positions[sorted_clients, slot] = order
    mask[sorted_clients, slot] = True
    return positions, mask, counts


class Silo:
    """The K clients of one silo; a round is start_round -> exchange -> set_others -> step x Q ->
    average. `x` (M, ...) and `y` (M,): the silo's features and the labels of every ID, on the device (`x` may be
    anything that indexes like a tensor: uint8 images standardised when indexed, engines/vertical_inputs.py Images);
    `owner` (M,) long: the client that holds each ID."""

    def __init__(self, layout: StateLayout, x: Tensor, y: Tensor, owner: Tensor, K: int, lr: float) -> None:
        self.layout, self.x, self.y, self.owner, self.K, self.lr = layout, x, y, owner, K, lr
        self.batch: Tensor | None = None

    def start_round(self, hub: Tensor, batch: Tensor) -> None:
        """Every client copies the hub's state; the round's minibatch `batch` (B,) of IDs."""
        raise NotImplementedError

    def exchange(self) -> Tensor:
        """The silo's embeddings (B, out) of the round's batch, each from its owner's model (train mode)."""
        raise NotImplementedError

    def set_others(self, phi_other: Tensor) -> None:
        """The sum (B, out) of the other silos' embeddings of the batch, fixed for the round."""
        raise NotImplementedError

    def step(self) -> None:
        """One local SGD step of every client that holds IDs of the batch."""
        raise NotImplementedError

    def average(self) -> Tensor:
        """The unweighted mean (S,) of the K clients' states (empty clients included): the hub's state at
        the round's end, and the virtual average evaluated within a round."""
        raise NotImplementedError

    def clients(self) -> Tensor:
        """The clients' states (K, S)."""
        raise NotImplementedError

    def load_clients(self, hub: Tensor, states: Tensor, batch: Tensor, phi_other: Tensor) -> None:
        """Resume within a round: the hub's state at its start, the clients' states (K, S), the batch and
        the other silos' embeddings."""
        raise NotImplementedError

    def _slots(self, batch: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        self.batch = batch
        return client_slots(self.owner[batch], self.K)

    def _pad(self, batch: Tensor, dtype: torch.dtype) -> None:
        """The round's samples of every client at once, padded: `positions` and `mask` (K, width), `xs` and `ys`
        (K, width, ...), gathered once for the Q steps, and `weight`, the mask scaled so that a client's padded mean
        is the mean over its own samples."""
        positions, mask, counts = self._slots(batch)
        self.positions, self.mask = positions, mask
        ids = batch[positions]
        self.xs, self.ys = self.x[ids], self.y[ids]
        scale = positions.shape[1] / counts.clamp(min=1).to(dtype)
        self.weight = mask.to(dtype) * scale[:, None]


class LoopSilo(Silo):
    """One client at a time (the reference; any model, BatchNorm included)."""

    def start_round(self, hub: Tensor, batch: Tensor) -> None:
        positions, mask, counts = self._slots(batch)
        self.own = [positions[k, : int(counts[k])] for k in range(self.K)]  # batch positions of client k
        self.states = hub.expand(self.K, -1).clone()

    def exchange(self) -> Tensor:
        phi = None
        for k, pos in enumerate(self.own):
            if len(pos):
                out = self.layout.forward(self.states[k], self.x[self.batch[pos]], train=True)
                phi = out.new_zeros(len(self.batch), out.shape[-1]) if phi is None else phi
                phi[pos] = out
        return phi

    def set_others(self, phi_other: Tensor) -> None:
        self.phi_other = phi_other
        self.inputs = []
        for pos in self.own:
            ids = self.batch[pos]
            self.inputs.append((self.x[ids], self.y[ids], phi_other[pos], phi_other.new_ones(len(pos))))

    def step(self) -> None:
        P = self.layout.n_params
        for k, (x, y, phi, weight) in enumerate(self.inputs):
            if len(y):  # a client without IDs in the batch skips its step (docs/papers/tdcd.md R13)
                g = self.layout.grad(self.states[k], x, y, (phi, weight), FUSED_LOSS)
                self.states[k, :P].sub_(g, alpha=self.lr)

    def average(self) -> Tensor:
        return self.states.mean(0)

    def clients(self) -> Tensor:
        return self.states

    def load_clients(self, hub: Tensor, states: Tensor, batch: Tensor, phi_other: Tensor) -> None:
        self.start_round(hub, batch)
        self.states = states.clone()
        self.set_others(phi_other)


class VectorizedSilo(Silo):
    """All K clients as one computation over stacked parameters (models without buffers)."""

    def __init__(self, layout: StateLayout, x: Tensor, y: Tensor, owner: Tensor, K: int, lr: float) -> None:
        super().__init__(layout, x, y, owner, K, lr)
        if layout.has_buffers:
            raise ValueError("VectorizedSilo needs a model without buffers; a BatchNorm model's is BatchNormSilo")
        self.flat = FlatModel(layout.module)
        self.grad = stacked_grad(self.flat, FUSED_LOSS)
        self.fused = fused_sgd(self.flat, FUSED_LOSS, lr)
        self.w: Tensor | None = None
        self.g: Tensor | None = None

    def start_round(self, hub: Tensor, batch: Tensor) -> None:
        self._pad(batch, hub.dtype)
        self.hub = hub
        self.w = self.flat.stack(hub, self.K, out=self.w)
        self.g = torch.empty_like(self.w) if self.g is None else self.g

    def exchange(self) -> Tensor:
        # every client starts from the hub and no model here has buffers: the hub's forward over the
        # batch is each owner's embedding
        return self.layout.forward(self.hub, self.x[self.batch], train=True)

    def set_others(self, phi_other: Tensor) -> None:
        self.phi_other = phi_other
        self.phis = phi_other[self.positions]

    def step(self) -> None:
        extra = (self.phis, self.weight)
        if self.fused is not None:
            self.fused(self.w, self.xs, self.ys, extra)
        else:
            self.grad(self.w, self.g, self.xs, self.ys, extra)
            self.w.sub_(self.g, alpha=self.lr)

    def average(self) -> Tensor:
        return torch.cat([p.mean(0).reshape(-1) for p in self.flat.unstack(self.w, self.K).values()])

    def clients(self) -> Tensor:
        return self.flat.clients(self.w, self.K)

    def load_clients(self, hub: Tensor, states: Tensor, batch: Tensor, phi_other: Tensor) -> None:
        self.start_round(hub, batch)
        self.w = self.flat.stack(states, self.K, out=self.w)
        self.set_others(phi_other)


def make_silo(backend: str, layout: StateLayout, x: Tensor, y: Tensor, owner: Tensor, K: int, lr: float) -> Silo:
    """The silo of a backend: vectorized is VectorizedSilo for a model without buffers, BatchNormSilo for one with
    BatchNorm (nn/batchnorm_silo.py, which builds on this module)."""
    if backend not in SILO_BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {SILO_BACKENDS}")
    if backend == "loop":
        return LoopSilo(layout, x, y, owner, K, lr)
    if layout.has_buffers:
        from fedrepro.nn.batchnorm_silo import BatchNormSilo

        return BatchNormSilo(layout, x, y, owner, K, lr)
    return VectorizedSilo(layout, x, y, owner, K, lr)
