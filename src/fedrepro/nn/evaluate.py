"""Evaluation of a server model: loss and accuracy, batched and without gradients."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from fedrepro.nn.convnets import grouped_convnet, replicated_forward
from fedrepro.nn.flat import FlatModel
from fedrepro.nn.losses import CROSS_ENTROPY, Loss


def evaluate(*args, **kwargs) -> dict[str, float]:
    """evaluate_on_device's means as floats (which waits for the device)."""
    return floats(evaluate_on_device(*args, **kwargs))


def floats(values: dict[str, Tensor]) -> dict[str, float]:
    return {name: float(value) for name, value in values.items()}


@torch.no_grad()
def evaluate_on_device(
    flat: FlatModel,
    W: Tensor,
    images: Tensor,
    labels: Tensor,
    index: Tensor | None = None,
    weights: Tensor | None = None,
    batch_size: int = 2048,
    loss: Loss = CROSS_ENTROPY,
    extra: Sequence[Tensor] = (),
) -> dict[str, Tensor]:
    """Weighted mean loss (per-sample `loss.samples`, cross-entropy by default) and accuracy of W over
    images[index] (default: all), weights default to 1; `extra` are the loss's per-sample inputs, each
    aligned with images. Gathers one batch at a time, so a large index never copies the whole set;
    without an index, batches are slices (no copy at all). Evaluation is a large share of a
    reduced-scale run. The means are 0-d tensors on W's device: nothing waits for the device (a side stream's
    work, SideStream)."""
    forward = _server_forward(flat, W)
    n = len(labels) if index is None else len(index)
    weights = torch.ones(n, device=W.device) if weights is None else weights
    weights = weights.to(W.dtype)
    total_loss = correct = torch.zeros((), dtype=W.dtype, device=W.device)
    for s in range(0, n, batch_size):
        c = weights[s : s + batch_size]
        if index is None:
            x, y, e = images[s : s + batch_size], labels[s : s + batch_size], [a[s : s + batch_size] for a in extra]
        else:
            i = index[s : s + batch_size]  # index_select: ~2x faster than images[i]
            x, y, e = images.index_select(0, i), labels.index_select(0, i), [a.index_select(0, i) for a in extra]
        out = forward(x)
        total_loss = total_loss + loss.samples(out, y, *e) @ c
        correct = correct + (loss.predictions(out, *e) == y).to(c.dtype) @ c
    total = weights.sum()
    return {"loss": total_loss / total, "accuracy": correct / total}


def _server_forward(flat: FlatModel, W: Tensor) -> Callable[[Tensor], Tensor]:
    """The model's forward at W: a conv net on the CPU through the grouped path the vectorized clients
    use (nn/convnets.py, faster there), any other model through the module itself."""
    if W.device.type == "cpu" and grouped_convnet(flat.module):
        params = flat.unflatten(W)
        return lambda x: replicated_forward(flat.module, params, x)
    return lambda x: flat.forward(W, x)


def pooled_train_set(
    table: Tensor, subsample: int | None = None, gen: torch.Generator | None = None
) -> tuple[Tensor, Tensor]:
    """The pooled device data as (unique pool indices, multiplicities), to pass as index/weights.

    The objective (P) weights every device slot equally, so an image held by several devices counts
    that many times (docs/papers/fedcluster.md R16). `subsample` slots drawn once without replacement from `gen` give a
    cheaper fixed estimate.
    """
    slots = table.flatten()
    if subsample is not None and subsample < len(slots):
        pick = torch.randperm(len(slots), generator=gen, device=gen.device)[:subsample]
        slots = slots[pick.to(slots.device)]
    return torch.unique(slots, return_counts=True)


class SideStream:
    """Evaluation beside training: work queued on a CUDA stream of its own after what the current stream has queued
    so far, so the device runs it while the current stream goes on; its 0-d results are read there once done. On
    any other device the work runs at once."""

    def __init__(self, device: torch.device) -> None:
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None

    def launch(self, work: Callable[[Tensor], dict[str, Tensor]], W: Tensor) -> Callable[[], dict[str, float]]:
        """work(W) at W's value now, whatever the current stream does to W next; returns the reader of its values."""
        if self.stream is None:
            out = work(W)
            return lambda: floats(out)
        W = W.clone()
        self.stream.wait_stream(torch.cuda.current_stream(W.device))
        with torch.cuda.stream(self.stream):
            out = work(W)
            done = torch.cuda.Event()
            done.record()
        W.record_stream(self.stream)  # W's memory is not reused before the work is done

        def read() -> dict[str, float]:
            done.synchronize()
            with torch.cuda.stream(self.stream):  # copies to the host wait for this stream only
                return floats(out)

        return read
