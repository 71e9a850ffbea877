"""The K clients of a silo whose network has BatchNorm (TDCD's ResNet-18 silos, paper §5.1) as one computation.

The loop backend (nn/silos.py LoopSilo, the reference) trains client k alone on its own IDs of the round's batch:
each BatchNorm normalizes by the batch statistics of those samples and moves client k's own running statistics
(forward in train mode, at the exchange and at every local step). Here the K clients run as torch.func's vmap of
one client's computation over a client-major stack (K, S) of whole states, parameters then running statistics (the
loop's layout, StateLayout), on the round's samples padded to (K, width) as the vectorized silo pads them. Padding
must not enter a client's statistics, so the model runs as a copy whose BatchNorm2d layers compute them over the
client's own samples only (MaskedBatchNorm2d: a 0/1 mask over the slots) and return the moved running statistics
instead of writing them in place (vmap cannot write a client's row from inside). A client without IDs in the batch
changes nothing, as the loop skips it: its gradient is zero (every weight of its loss is) and its statistics stay.

The same arithmetic in another order than PyTorch's fused batch_norm, so not the loop's floats bit for bit: the
tests hold both backends to the same parameters and statistics in float64 (rtol 1e-9). At K clients a local step is
one vmapped forward and backward instead of K, for a GPU whose time the loop's kernel launches take
(docs/performance.md, "The paper scale on a GPU").
"""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

from fedrepro.nn.silos import FUSED_LOSS, LoopSilo, StateLayout


class MaskedBatchNorm2d(nn.BatchNorm2d):
    """BatchNorm2d in train mode over the samples a mask keeps: set `context` = (mask (W,), sink dict, prefix)
    before a call; the moved running statistics go to sink[prefix + name], the module's own stay untouched."""

    context: tuple[Tensor, dict[str, Tensor], str]

    def forward(self, x: Tensor) -> Tensor:
        mask, sink, prefix = self.context
        keep = mask.to(x.dtype)[:, None, None, None]
        count = keep.sum() * x.shape[2] * x.shape[3]  # values per channel, as F.batch_norm counts them
        n = count.clamp(min=1)
        mean = (x * keep).sum((0, 2, 3)) / n
        centred = x - mean[None, :, None, None]
        var = (centred.square() * keep).sum((0, 2, 3)) / n  # biased: what the batch is normalized by
        m, seen = self.momentum, count > 0
        # a client without samples is scaled by 1, not by 1/sqrt(eps) at every layer (inf in float32 after ~15,
        # and inf x a zero loss weight is a NaN gradient)
        scale = torch.where(seen, torch.rsqrt(var + self.eps), torch.ones_like(var))
        out = centred * scale[None, :, None, None]
        out = out * self.weight[None, :, None, None] + self.bias[None, :, None, None]
        unbiased = var.detach() * n / (n - 1).clamp(min=1)
        sink[prefix + "running_mean"] = torch.where(seen, (1 - m) * self.running_mean + m * mean.detach(),
                                                    self.running_mean)
        sink[prefix + "running_var"] = torch.where(seen, (1 - m) * self.running_var + m * unbiased,
                                                   self.running_var)
        return out


def masked_copy(module: nn.Module) -> tuple[nn.Module, list[tuple[str, MaskedBatchNorm2d]]]:
    """A copy of `module` whose BatchNorm2d layers are MaskedBatchNorm2d (same names and state), and those layers
    by name; refused where a floating buffer is not a BatchNorm2d's running statistic or a momentum is None."""
    twin = copy.deepcopy(module)
    layers = []
    for name, layer in twin.named_modules():
        if type(layer) is nn.BatchNorm2d:
            if layer.momentum is None or not layer.track_running_stats or not layer.affine:
                raise ValueError(f"{name}: the vectorized BatchNorm silo needs affine BatchNorm with a momentum and "
                                 f"running statistics")
            layer.__class__ = MaskedBatchNorm2d
            layers.append((name, layer))
    stats = {f"{name}.{stat}" for name, _ in layers for stat in ("running_mean", "running_var")}
    other = [n for n, b in twin.named_buffers() if b.is_floating_point() and n not in stats]
    if other:
        raise ValueError(f"buffers {other} are not BatchNorm2d running statistics: use the loop backend")
    return twin, layers


class BatchNormSilo(LoopSilo):
    """All K clients of a silo with BatchNorm as one vmapped computation over their whole states (K, S): the loop's
    client-major states, so its average, states and resume are the loop's."""

    def __init__(self, layout: StateLayout, x: Tensor, y: Tensor, owner: Tensor, K: int, lr: float) -> None:
        super().__init__(layout, x, y, owner, K, lr)
        self.model, self.layers = masked_copy(layout.module)
        self.model.train(True)
        self._step = vmap(grad(self._loss, has_aux=True))
        self._embed = vmap(self._forward)

    def _forward(self, state: dict[str, Tensor], x: Tensor, mask: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """One client's output on its padded samples x (width, ...) and its moved running statistics."""
        sink: dict[str, Tensor] = {}
        for name, layer in self.layers:
            layer.context = (mask, sink, f"{name}.")
        out = functional_call(self.model, state, (x,))
        return out, {n: sink[n] for n, _ in self.layout.buffers}

    def _loss(self, params: dict[str, Tensor], buffers: dict[str, Tensor], x: Tensor, y: Tensor, mask: Tensor,
              phi: Tensor, weight: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        out, stats = self._forward({**params, **buffers}, x, mask)
        return FUSED_LOSS.value(out, y, phi, weight), stats

    def _stacked(self) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
        """The clients' parameters and running statistics by name, (K, *shape) views of the states."""
        views = list(self.layout.views(self.states).items())
        P = len(self.layout.params)
        return dict(views[:P]), dict(views[P:])

    def start_round(self, hub: Tensor, batch: Tensor) -> None:
        self._pad(batch, hub.dtype)
        self.states = hub.expand(self.K, -1).clone()

    def exchange(self) -> Tensor:
        params, buffers = self._stacked()
        with torch.no_grad():
            out, stats = self._embed({**params, **buffers}, self.xs, self.mask)
        for n, view in buffers.items():  # each owner's forward moved its statistics, as the loop's does
            view.copy_(stats[n])
        phi = out.new_zeros(len(self.batch), out.shape[-1])
        phi[self.positions[self.mask]] = out[self.mask]
        return phi

    def set_others(self, phi_other: Tensor) -> None:
        self.phi_other = phi_other
        self.phis = phi_other[self.positions]

    def step(self) -> None:
        params, buffers = self._stacked()
        grads, stats = self._step(params, buffers, self.xs, self.ys, self.mask, self.phis, self.weight)
        for n, view in params.items():  # views of the states: written in place
            view.sub_(grads[n], alpha=self.lr)
        for n, view in buffers.items():
            view.copy_(stats[n])
