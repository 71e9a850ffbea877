"""TDCD's MIMIC-III silo model (the authors' code; docs/papers/tdcd.md R7): one LSTM layer over the silo's
columns, its last hidden state h_T -> Linear(hidden, out).

The cell is written out (input projection for all steps at once, then a loop over time with matmuls)
rather than nn.LSTM, whose fused kernel has no vmap batching rule on the CPU (a slow fallback): written
this way the clients of a silo train under vmap(grad), and `stacked_forward` runs D clients' copies
at once as batched matmuls, which the client layer's vectorized backend uses (nn/gradients.py).
Parameters, gate order (input, forget, cell, output) and initialisation (uniform in +-1/sqrt(hidden))
are nn.LSTM's, so it computes what nn.LSTM with the same weights computes
(tests/vertical/test_time_and_models.py).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class SiloLSTM(nn.Module):
    def __init__(self, in_shape: tuple[int, int], n_classes: int, hidden: int = 16) -> None:
        super().__init__()
        _, features = in_shape  # (time steps, columns)
        if hidden < 1:
            raise ValueError(f"hidden = {hidden} must be >= 1")
        self.hidden = hidden
        self.weight_ih = nn.Parameter(torch.empty(4 * hidden, features))
        self.weight_hh = nn.Parameter(torch.empty(4 * hidden, hidden))
        self.bias_ih = nn.Parameter(torch.empty(4 * hidden))
        self.bias_hh = nn.Parameter(torch.empty(4 * hidden))
        bound = 1 / math.sqrt(hidden)
        for p in (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh):
            nn.init.uniform_(p, -bound, bound)
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x: Tensor) -> Tensor:
        """x (B, T, D) -> (B, out)."""
        projected = torch.addmm(self.bias_ih + self.bias_hh, x.flatten(0, 1), self.weight_ih.t())
        projected = projected.view(x.shape[0], x.shape[1], -1)
        h = c = x.new_zeros(x.shape[0], self.hidden)
        for t in range(x.shape[1]):
            i, f, g, o = (projected[:, t] + h @ self.weight_hh.t()).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        return self.head(h)

    def stacked_forward(self, params: dict[str, Tensor], x: Tensor) -> Tensor:
        """Outputs (D, B, out) of D clients with parameters params[name] (D, *shape) on x (D, B, T, F): the
        same arithmetic as forward, as batched matmuls (the client layer's vectorized backend; faster than
        vmap of forward, which pays the per-op overhead of the time loop on every client)."""
        D, B, T, _ = x.shape
        w_hh = params["weight_hh"].transpose(1, 2)
        bias = (params["bias_ih"] + params["bias_hh"]).unsqueeze(1)
        projected = torch.baddbmm(bias, x.flatten(1, 2), params["weight_ih"].transpose(1, 2)).view(D, B, T, -1)
        h = c = x.new_zeros(D, B, self.hidden)
        for t in range(T):
            i, f, g, o = torch.baddbmm(projected[:, :, t], h, w_hh).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        return torch.baddbmm(params["head.bias"].unsqueeze(1), h, params["head.weight"].transpose(1, 2))
