"""Minibatch gradients of an injected loss (nn/losses.py) w.r.t. flat parameters, per backend.

- `client_grad`: one client (P,), plain autograd through the module (the loop backend, the reference);
- `stacked_grad(flat, loss)`: D clients at once, on a parameter-major stack (D*P,), written into a
  caller's buffer (reused across steps: a fresh D*P tensor per step costs as much as the arithmetic).
  A plain MLP (Flatten? Linear (ReLU Linear)*, any depth) has a closed form in batched matmuls:
  at these sizes the per-op overhead of vmap/autograd, not arithmetic, sets the speed
  (benchmarks/bench_clients.py). On the CPU a conv net of the layers nn/convnets.py knows is one
  autograd graph over all clients (grouped convolutions in channels_last: ~5x the loop on `cnn_tiny`,
  where vmap is ~1.5x). Any other module, and conv nets on a GPU (where the grouped path is not yet
  measured or tested; vmap is, under CUDA graphs), go through torch.func: vmap of grad of the same loss,
  unless the module has its own `stacked_forward(params, x)` over D clients (the LSTM of models/lstm.py:
  its time loop as batched matmuls), differentiated as one graph like the grouped conv nets.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

import torch
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

from fedrepro.nn.convnets import grouped_convnet, grouped_forward, replicated_forward
from fedrepro.nn.flat import FlatModel
from fedrepro.nn.losses import Loss

# The device types on which a conv net of nn/convnets.py takes the grouped path; elsewhere vmap(grad). On CUDA the
# grouped path is not yet measured against vmap (benchmarks/gpu_throughput.py --grouped-on-cuda measures it).
GROUPED_DEVICES = {"cpu"}
# (w (D*P,), g (D*P,) written, x (D, B, ...), y (D, B), extra: per-sample loss inputs (D, B, ...))
StackedGrad = Callable[[Tensor, Tensor, Tensor, Tensor, tuple[Tensor, ...]], None]
FusedSGD = Callable[[Tensor, Tensor, Tensor, tuple[Tensor, ...]], None]  # (w updated, x, y, extra)


def client_grad(flat: FlatModel, loss: Loss, w: Tensor, x: Tensor, y: Tensor, extra: tuple[Tensor, ...] = ()) -> Tensor:
    leaf = w.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(loss.value(flat.forward(leaf, x), y, *extra), leaf)
    return g


def fused_sgd(flat: FlatModel, loss: Loss, lr: float) -> FusedSGD | None:
    """A plain SGD step that applies each layer's gradient as soon as it is known, in place
    (w -= lr * grad as one baddbmm per weight: no gradient stack is written or read back, which
    halves the memory traffic over D*P); None where there is no closed form."""
    flatten = plain_mlp(flat.module)
    return None if flatten is None else partial(_mlp_sgd_step, flat, loss, flatten, lr)


def stacked_grad(flat: FlatModel, loss: Loss) -> StackedGrad:
    flatten = plain_mlp(flat.module)
    if flatten is not None:
        return partial(_mlp_grad, flat, loss, flatten)
    stacked_forward = getattr(flat.module, "stacked_forward", None)
    if stacked_forward is not None:  # the module runs D clients at once itself (e.g. models/lstm.py)
        return partial(_autograd_of_sum, flat, loss, stacked_forward)
    vmapped = vmapped_grad(flat, loss)
    if not grouped_convnet(flat.module):
        return vmapped
    grouped = partial(_autograd_of_sum, flat, loss, partial(grouped_forward, flat.module))

    def by_device(w: Tensor, g: Tensor, x: Tensor, y: Tensor, extra: tuple[Tensor, ...]) -> None:
        if w.device.type not in GROUPED_DEVICES:
            return vmapped(w, g, x, y, extra)
        copies = _copies(y.shape[1]) if len(y) == 1 else 1
        if copies > 1:
            return _replicated_grad(flat, loss, copies, w, g, x, y, extra)
        return grouped(w, g, x, y, extra)

    return by_device


def _copies(batch: int, most: int = 8) -> int:
    """The most equal parts (<= `most`) a batch splits into."""
    return next(c for c in range(min(most, batch), 0, -1) if batch % c == 0)


def _replicated_grad(flat: FlatModel, loss: Loss, copies: int, w: Tensor, g: Tensor, x: Tensor, y: Tensor,
                     extra: tuple[Tensor, ...]) -> None:
    """One model's gradient (e.g. centralized SGD's) through the grouped path: its batch cut into `copies`
    equal parts run as identical clients, whose parameters are expanded views of the one model's, so
    autograd sums their gradients. The minibatch loss is a mean over the batch, so the mean of the parts'
    means is the whole batch's. With one model's 8-64 channels the grouped kernels have too few channels to
    vectorise over (nn/convnets.replicated_forward); ~3x a step of batch 60 on `cnn_tiny`."""
    params = {n: p.detach().requires_grad_() for n, p in flat.unflatten(w).items()}
    parts = lambda t: t.reshape(copies, t.shape[1] // copies, *t.shape[2:])  # noqa: E731
    with torch.enable_grad():
        out = replicated_forward(flat.module, params, x[0], copies).unsqueeze(0)
        total = loss.value(parts(out), parts(y), *map(parts, extra)).sum() / copies
        grads = torch.autograd.grad(total, list(params.values()))
    torch.cat([p.reshape(-1) for p in grads], out=g)


def _autograd_of_sum(
    flat: FlatModel, loss: Loss, forward: Callable[[dict[str, Tensor], Tensor], Tensor],
    w: Tensor, g: Tensor, x: Tensor, y: Tensor, extra: tuple[Tensor, ...],
) -> None:
    """One autograd graph over all D clients: forward(params (D, *shape) by name, x (D, B, ...)) -> (D, B, K).
    Clients' losses are independent, so the gradient of their sum is each client's own."""
    params = {n: p.detach().requires_grad_() for n, p in flat.unstack(w, len(y)).items()}
    with torch.enable_grad():
        total = loss.value(forward(params, x), y, *extra).sum()
        grads = torch.autograd.grad(total, list(params.values()))
    torch.cat([p.reshape(-1) for p in grads], out=g)


def vmapped_grad(flat: FlatModel, loss: Loss) -> StackedGrad:
    """vmap of grad of one client's loss: any module."""

    def client_loss(params: dict[str, Tensor], x: Tensor, y: Tensor, *extra: Tensor) -> Tensor:
        return loss.value(functional_call(flat.module, params, (x,)), y, *extra)

    per_client = vmap(grad(client_loss))

    def vmapped(w: Tensor, g: Tensor, x: Tensor, y: Tensor, extra: tuple[Tensor, ...]) -> None:
        grads = per_client(flat.unstack(w, len(y)), x, y, *extra)
        torch.cat([p.reshape(-1) for p in grads.values()], out=g)

    return vmapped


def plain_mlp(module: nn.Module) -> bool | None:
    """None unless the module is Flatten? Linear (ReLU Linear)* with biases (checked on its structure,
    not its class); else whether it starts with Flatten (inputs to flatten per sample)."""
    if not isinstance(module, nn.Sequential) or type(module).forward is not nn.Sequential.forward:
        return None
    layers = list(module)
    flatten = bool(layers) and type(layers[0]) is nn.Flatten and (layers[0].start_dim, layers[0].end_dim) == (1, -1)
    layers = layers[flatten:]
    linear = all(type(m) is nn.Linear and m.bias is not None for m in layers[0::2])
    relu = all(type(m) is nn.ReLU for m in layers[1::2])
    return flatten if len(layers) % 2 == 1 and linear and relu else None


def _mlp_grad(
    flat: FlatModel, loss: Loss, flatten: bool, w: Tensor, g: Tensor, x: Tensor, y: Tensor, extra: tuple[Tensor, ...]
) -> None:
    grads = list(flat.unstack(g, len(y)).values())

    def write(layer: int, dz: Tensor, act: Tensor) -> None:
        torch.bmm(dz.transpose(1, 2), act, out=grads[2 * layer])
        torch.sum(dz, 1, out=grads[2 * layer + 1])

    _mlp_backprop(flat, loss, flatten, w, x, y, extra, write)


def _mlp_sgd_step(
    flat: FlatModel, loss: Loss, flatten: bool, lr: float, w: Tensor, x: Tensor, y: Tensor, extra: tuple[Tensor, ...]
) -> None:
    params = list(flat.unstack(w, len(y)).values())

    def update(layer: int, dz: Tensor, act: Tensor) -> None:
        params[2 * layer].baddbmm_(dz.transpose(1, 2), act, alpha=-lr)
        params[2 * layer + 1].add_(dz.sum(1), alpha=-lr)

    _mlp_backprop(flat, loss, flatten, w, x, y, extra, update)


def _mlp_backprop(
    flat: FlatModel, loss: Loss, flatten: bool, w: Tensor, x: Tensor, y: Tensor, extra: tuple[Tensor, ...],
    consume: Callable[[int, Tensor, Tensor], None],
) -> None:
    """Backpropagation through the layers (weight, bias pairs in parameter order): each layer's
    gradient, as its output gradient dz (D, B, out) and input act (D, B, in), goes to
    consume(layer, dz, act) once the layer's weights are no longer needed (so it may update them)."""
    params = list(flat.unstack(w, len(y)).values())
    acts = [x.flatten(2) if flatten else x]  # each layer's input: x, then the hidden ReLU outputs
    for weight, bias in zip(params[0:-2:2], params[1:-2:2]):
        acts.append(torch.baddbmm(bias.unsqueeze(1), acts[-1], weight.transpose(1, 2)).relu_())
    dz = _output_grad(loss, torch.baddbmm(params[-1].unsqueeze(1), acts[-1], params[-2].transpose(1, 2)), y, extra)
    for layer in reversed(range(len(acts))):
        below = None
        if layer:  # ReLU's own backward: one fused op
            below = torch.ops.aten.threshold_backward(torch.bmm(dz, params[2 * layer]), acts[layer], 0)
        consume(layer, dz, acts[layer])
        dz = below


def _output_grad(loss: Loss, out: Tensor, y: Tensor, extra: tuple[Tensor, ...]) -> Tensor:
    """d (each client's minibatch loss) / d out (D, B, K): the loss's closed form, else autograd from
    the output only (clients' losses are independent, so the gradient of their sum)."""
    closed = loss.output_grad(out, y, *extra)
    if closed is not None:
        return closed
    with torch.enable_grad():
        out.requires_grad_(True)
        (dz,) = torch.autograd.grad(loss.value(out, y, *extra).sum(), out)
    return dz
