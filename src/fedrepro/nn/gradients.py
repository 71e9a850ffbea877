"""Minibatch gradients of the mean cross-entropy w.r.t. flat parameters, per backend.

- `client_grad`: one client (P,), plain autograd through the module (the loop backend, the reference);
- `stacked_grad(flat)`: D clients at once, on a parameter-major stack (D*P,). Any module goes
  through torch.func (vmap of grad of the same loss; convolutions become grouped convolutions).
  The MLP of the reduced scale has a closed form in batched matmuls: there the model is so small
  that per-op overhead of vmap/autograd, not arithmetic, sets the speed (benchmarks/bench_clients.py).
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor
from torch.func import grad, vmap

from fedrepro.nn.flat import FlatModel
from fedrepro.models import MLP

StackedGrad = Callable[[Tensor, Tensor, Tensor], Tensor]  # (w (D*P,), x (D,B,...), y (D,B)) -> (D*P,)


def client_grad(flat: FlatModel, w: Tensor, x: Tensor, y: Tensor) -> Tensor:
    leaf = w.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(flat.loss(leaf, x, y), leaf)
    return g


def stacked_grad(flat: FlatModel) -> StackedGrad:
    if type(flat.module) is MLP:
        return lambda w, x, y: _mlp_grad(flat, w, x, y)
    per_client = vmap(grad(flat.params_loss))

    def vmapped(w: Tensor, x: Tensor, y: Tensor) -> Tensor:
        grads = per_client(flat.unstack(w, len(y)), x, y)
        return torch.cat([g.reshape(-1) for g in grads.values()])

    return vmapped


def _mlp_grad(flat: FlatModel, w: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """Backpropagation through Linear -> ReLU -> Linear -> mean CE, written into a new stack."""
    D, B = y.shape
    W1, b1, W2, b2 = flat.unstack(w, D).values()
    g = torch.empty_like(w)
    gW1, gb1, gW2, gb2 = flat.unstack(g, D).values()
    x = x.reshape(D, B, -1)
    h = torch.baddbmm(b1.unsqueeze(1), x, W1.transpose(1, 2)).relu_()
    dz = torch.baddbmm(b2.unsqueeze(1), h, W2.transpose(1, 2)).softmax(-1)
    dz.scatter_add_(2, y.unsqueeze(2), torch.full_like(dz[..., :1], -1.0)).div_(B)  # (softmax - onehot) / B
    torch.bmm(dz.transpose(1, 2), h, out=gW2)
    torch.sum(dz, 1, out=gb2)
    dh = torch.ops.aten.threshold_backward(torch.bmm(dz, W2), h, 0)  # ReLU's own backward: one fused op
    torch.bmm(dh.transpose(1, 2), x, out=gW1)
    torch.sum(dh, 1, out=gb1)
    return g
