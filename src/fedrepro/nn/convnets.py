"""The forward pass of D conv-net clients at once, as one autograd graph (the vectorized backend on the CPU).

Clients' convolutions become one grouped convolution (groups = D) over channels_last activations
(B, D*C, H, W), whose memory is (B, H, W, D, C): on the CPU, oneDNN's grouped kernels are ~8x faster in
channels_last than in the default layout, and so is max-pooling (benchmarks/bench_clients.py). Layers
that act per channel (ReLU, max-pool) run on the grouped tensor as they are; local response
normalisation, which mixes neighbouring channels, sums the squares over each client's own channels with
one (C, C) band matmul (PyTorch's own pads and average-pools in 3D, ~10x slower). After Flatten the
clients move to the front, (D, B, F), and linear layers are batched matmuls. Results equal the module's
own forward to float rounding; correctness never depends on the memory layout, only speed does.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_BODY = (nn.Conv2d, nn.ReLU, nn.MaxPool2d, nn.LocalResponseNorm)  # before Flatten: (B, D*C, H, W)
_HEAD = (nn.Linear, nn.ReLU)  # after Flatten: (D, B, F)


def grouped_convnet(module: nn.Module) -> bool:
    """Whether the module is a Sequential of Conv2d / ReLU / MaxPool2d / LocalResponseNorm layers, then
    Flatten, then Linear / ReLU (checked on its structure, not its class), with plain convolutions and
    every Conv2d and Linear with a bias."""
    if not isinstance(module, nn.Sequential) or type(module).forward is not nn.Sequential.forward:
        return False
    kinds = [type(m) for m in module]
    if nn.Flatten not in kinds:
        return False
    cut = kinds.index(nn.Flatten)
    flatten = module[cut]
    body, head = list(module)[:cut], kinds[cut + 1 :]
    return (
        (flatten.start_dim, flatten.end_dim) == (1, -1)
        and any(type(m) is nn.Conv2d for m in body)
        and all(type(m) in _BODY for m in body)
        and all(m.groups == 1 and m.padding_mode == "zeros" for m in body if type(m) is nn.Conv2d)
        and not any(m.return_indices for m in body if type(m) is nn.MaxPool2d)
        and all(k in _HEAD for k in head)
        and all(m.bias is not None for m in module if type(m) in (nn.Conv2d, nn.Linear))
    )


def grouped_forward(module: nn.Sequential, params: dict[str, Tensor], x: Tensor) -> Tensor:
    """Outputs (D, B, K) of D clients with parameters params[name] (D, *shape) on inputs x (D, B, C, H, W)."""
    D, B = x.shape[:2]
    h = stacked_channels_last(x)
    for i, m in enumerate(module):
        if isinstance(m, nn.Conv2d):
            weight, bias = params[f"{i}.weight"], params[f"{i}.bias"]
            h = F.conv2d(h, weight.flatten(0, 1), bias.flatten(), m.stride, m.padding, m.dilation, groups=D)
        elif isinstance(m, nn.LocalResponseNorm):
            h = _local_response_norm(h, m, D)
        elif isinstance(m, nn.Flatten):
            h = h.reshape(B, D, -1, *h.shape[2:]).transpose(0, 1).reshape(D, B, -1)  # PyTorch's (C, H, W) order
        elif isinstance(m, nn.Linear):
            h = torch.baddbmm(params[f"{i}.bias"].unsqueeze(1), h, params[f"{i}.weight"].transpose(1, 2))
        else:  # ReLU, MaxPool2d: per channel
            h = m(h)
    return h


def stacked_channels_last(x: Tensor) -> Tensor:
    """x (D, B, C, H, W) as one (B, D*C, H, W) batch in channels_last memory: channel d*C + c holds x[d, :, c].
    With C = 1 the permute and reshape alone leave a view in (D, B, H, W) memory, which the convolutions then
    keep (their output follows the input's layout): every layer ran in the slow NCHW kernels on 1-channel
    inputs (max-pooling forward ~20x slower, its backward and the convolutions ~1.3-3x). The copy makes the
    layout the same for every C."""
    B = x.shape[1]
    h = x.permute(1, 3, 4, 0, 2).reshape(B, *x.shape[3:], -1).permute(0, 3, 1, 2)
    return h.contiguous(memory_format=torch.channels_last)  # no copy where h already is (C > 1)


def replicated_forward(module: nn.Sequential, params: dict[str, Tensor], x: Tensor, copies: int = 8) -> Tensor:
    """One model's outputs (B, K) on x (B, C, H, W) through grouped_forward, the batch cut into `copies`
    parts run as that many identical clients. With a single model's 8-64 channels, channels_last
    max-pooling has too few channels to vectorise over; 8 copies make evaluation ~2.6x faster on
    `cnn_tiny` and ~2x on AlexNet than the module's own forward (benchmarks/bench_eval.py)."""
    B = len(x)
    per = -(-B // copies)
    if per * copies != B:  # pad the last part; the padded rows' outputs are dropped
        x = torch.cat([x, x.new_zeros(per * copies - B, *x.shape[1:])])
    stacked = {n: p.unsqueeze(0).expand(copies, *p.shape) for n, p in params.items()}
    return grouped_forward(module, stacked, x.view(copies, per, *x.shape[1:])).reshape(per * copies, -1)[:B]


def _local_response_norm(h: Tensor, m: nn.LocalResponseNorm, D: int) -> Tensor:
    """nn.LocalResponseNorm within each client's C channels of h (B, D*C, H, W): x / (k + alpha/size *
    sum of x^2 over channels c - size//2 .. c + (size-1)//2)^beta, as PyTorch (zero padding)."""
    C = h.shape[1] // D
    c = torch.arange(C, device=h.device)
    offset = c[:, None] - c[None, :]  # band[c', c]: channel c' is in channel c's window
    band = ((offset >= -(m.size // 2)) & (offset <= (m.size - 1) // 2)).to(h.dtype)
    last = h.permute(0, 2, 3, 1)  # (B, H, W, D*C), contiguous for a channels_last h
    sums = (last * last).reshape(-1, C) @ band
    return (last / sums.view(last.shape).mul(m.alpha / m.size).add(m.k).pow(m.beta)).permute(0, 3, 1, 2)
