"""Training losses as functions of a model's output, injected into local training and evaluation.

A client minimises the mean over its minibatch of per-sample losses l(out_b, y_b, *extra_b), where
`extra` are optional per-sample inputs held fixed during the local steps: e.g. TDCD's vertical
engine (TDCD paper §3, Eq. (4)) trains a silo on CE(own output + sum of the other silos' embeddings, y),
and a 0/1 mask (scaled by B / count) turns the mean into its masked mean. Every method takes any
leading dims: out (..., B, K), y (..., B), extra (..., B, ...), so the same object serves one
client (B, K) and a stack of D clients (D, B, K).
"""

from __future__ import annotations

from torch import Tensor


class Loss:
    """Subclasses define `samples`; `output_grad` (a closed form of the mean's gradient w.r.t. the
    output) spares the closed-form MLP path an autograd pass, and `predictions` feeds the accuracy."""

    def samples(self, out: Tensor, y: Tensor, *extra: Tensor) -> Tensor:
        """Per-sample losses (..., B)."""
        raise NotImplementedError

    def value(self, out: Tensor, y: Tensor, *extra: Tensor) -> Tensor:
        """The minibatch loss (...): mean over the batch dim."""
        return self.samples(out, y, *extra).mean(-1)

    def output_grad(self, out: Tensor, y: Tensor, *extra: Tensor) -> Tensor | None:
        """d value / d out (..., B, K) in closed form, or None: autograd on the output only."""
        return None

    def predictions(self, out: Tensor, *extra: Tensor) -> Tensor:
        """Predicted classes (..., B), for the accuracy."""
        return out.argmax(-1)


class CrossEntropy(Loss):
    """Mean cross-entropy of the output as logits (the default of every engine so far)."""

    def samples(self, out: Tensor, y: Tensor, *extra: Tensor) -> Tensor:
        return -out.log_softmax(-1).gather(-1, y.unsqueeze(-1)).squeeze(-1)

    def output_grad(self, out: Tensor, y: Tensor, *extra: Tensor) -> Tensor:
        """(softmax - onehot) / B, in place on the softmax."""
        g = out.softmax(-1)
        return g.scatter_add_(-1, y.unsqueeze(-1), g.new_full((*y.shape, 1), -1.0)).div_(y.shape[-1])


CROSS_ENTROPY = CrossEntropy()
