"""A model seen as a pure function of flat parameter tensors.

One client's parameters are a vector (P,). D clients in lockstep hold a stack (D*P,) laid out
parameter-major: each parameter's (D, *shape) block is contiguous, so batched matmuls and grouped
convolutions read it in place. Either way the optimizer is a few elementwise ops over one tensor,
whatever the number of layers. The module's own parameters are only a template (names, shapes,
initial values).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.func import functional_call


class FlatModel:
    def __init__(self, module: nn.Module) -> None:
        if any(True for _ in module.buffers()):
            raise ValueError("models with buffers (e.g. batch norm) are not supported: clients would need their own")
        self.module = module
        named = list(module.named_parameters())
        self.names = [n for n, _ in named]
        self.shapes = [tuple(p.shape) for _, p in named]
        self.numels = [math.prod(s) for s in self.shapes]
        self.n_params = sum(self.numels)

    def flatten(self) -> Tensor:
        """The module's current parameters as a new (P,) tensor (e.g. W0 from a seeded init)."""
        return torch.cat([p.detach().reshape(-1) for p in self.module.parameters()])

    def unflatten(self, w: Tensor) -> dict[str, Tensor]:
        """Views of one client's w (P,), one per parameter; no copy."""
        return {n: p.view(s) for n, p, s in zip(self.names, torch.split(w, self.numels), self.shapes)}

    def stack(self, W: Tensor, D: int, out: Tensor | None = None) -> Tensor:
        """W as a parameter-major stack (D*P,), in `out` if given: W (P,) gives D copies (a common
        start), W (D, P) one row per client."""
        out = W.new_empty(D * self.n_params) if out is None else out
        blocks = torch.split(out, [D * n for n in self.numels])
        for block, part in zip(blocks, torch.split(W.reshape(-1, self.n_params), self.numels, dim=1)):
            block.view(D, -1).copy_(part)  # a (1, n) part broadcasts
        return out

    def unstack(self, w: Tensor, D: int) -> dict[str, Tensor]:
        """Contiguous views (D, *shape) of a stack w (D*P,); no copy."""
        parts = torch.split(w, [D * n for n in self.numels])
        return {n: p.view(D, *s) for n, p, s in zip(self.names, parts, self.shapes)}

    def clients(self, w: Tensor, D: int) -> Tensor:
        """A stack (D*P,) as one row per client (D, P)."""
        return torch.cat([p.reshape(D, -1) for p in self.unstack(w, D).values()], dim=1)

    def forward(self, w: Tensor, x: Tensor) -> Tensor:
        return functional_call(self.module, self.unflatten(w), (x,))
