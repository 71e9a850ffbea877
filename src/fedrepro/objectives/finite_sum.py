"""Finite-sum objectives of linear models over N clients x M samples (FedPAGE paper §6; docs/papers/fedpage.md R1-R2).

f(x) = (1/N) sum_i f_i(x),  f_i(x) = (1/M) sum_j f_ij(x),  f_ij(x) = loss(a_ij^T x, b_ij) + reg(x).

Gradients are closed form: grad f_ij(x) = phi'(a_ij^T x, b_ij) a_ij + grad reg(x), so the gradient of
every client at its own point is two batched contractions. All tensors are float64: logistic runs
reach ||grad f|| ~ 1e-12, far below float32 resolution.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torch import Tensor

OBJECTIVES = ("robust_linear_regression", "logistic_nonconvex")
PARTITIONS = ("contiguous", "label_sorted")


class FiniteSumProblem:
    """N clients x M samples each, float64 torch tensors on `device`.

    Subclasses define the per-sample loss through `_loss` / `_dloss` (value and derivative in
    u = a^T x) and optionally a regularizer shared by every f_ij.
    """

    def __init__(self, A: Tensor, b: Tensor) -> None:
        if A.dim() != 3 or b.shape != A.shape[:2]:
            raise ValueError(f"expected A (N,M,d) and b (N,M), got {tuple(A.shape)} and {tuple(b.shape)}")
        self.A = A
        self.b = b
        self.n_clients, self.samples_per_client, self.dim = A.shape
        flat = A.reshape(-1, self.dim)
        self._b_flat = b.reshape(-1)
        # The global gradient is the only O(n*d) work (metric, FedPAGE full rounds). On binary LIBSVM
        # data torch CSR matvecs beat the dense (n,d) matvec ~7x on a9a (0.97 vs 6.4 ms per gradient)
        # and ~15x on w8a (1.15 vs 17.8 ms), measured on the 2-core CPU; keep A and A^T as CSR.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            self._csr = flat.to_sparse_csr()
            self._csr_t = flat.T.contiguous().to_sparse_csr()
        self._dot_memo: tuple[Tensor, int, Tensor] | None = None
        self._grad_memo: tuple[Tensor, int, Tensor] | None = None

    # --- per-objective pieces -------------------------------------------------------------------
    def _loss(self, u: Tensor, b: Tensor) -> Tensor:
        raise NotImplementedError

    def _dloss(self, u: Tensor, b: Tensor) -> Tensor:
        raise NotImplementedError

    def _reg_value(self, x: Tensor) -> float:
        return 0.0

    def _reg_grad(self, x: Tensor) -> Tensor | None:
        return None

    def reg_grad(self, x: Tensor) -> Tensor | None:
        """Gradient of the regularizer shared by every f_ij at x; None without one."""
        return self._reg_grad(x)

    # The same per-element formulas on numpy arrays (CPU), for the algorithms' inner loops on tiny arrays,
    # where torch's per-call overhead dominates. They must perform the torch versions' IEEE operations
    # in the same order: + - * / and negation round identically in numpy and torch; anything else
    # (sigmoid) is computed by torch itself, on an array of the same shape.
    def dloss_np(self, u: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def reg_grad_np(self, x: np.ndarray) -> np.ndarray | None:
        return None

    def _add_reg(self, g: Tensor, x: Tensor) -> Tensor:
        r = self._reg_grad(x)
        return g if r is None else g + r

    # --- runner-facing API ----------------------------------------------------------------------
    def full_grad(self, x: Tensor) -> Tensor:
        """Gradient (d,) of the global f over all n = N*M rows. Treat the result as read-only: the last
        one is kept and returned again for the same, unmodified x (the metric and a FedPAGE full round
        at the same round ask for it twice)."""
        memo = self._grad_memo
        if memo is not None and memo[0] is x and memo[1] == x._version:
            return memo[2]
        coef = self._dloss(self._rows_dot(x), self._b_flat) / self._b_flat.numel()
        g = self._add_reg(self._csr_t @ coef, x)
        self._grad_memo = (x, x._version, g)
        return g

    def value(self, x: Tensor) -> float:
        return float(self._loss(self._rows_dot(x), self._b_flat).mean()) + self._reg_value(x)

    def evaluate(self, x: Tensor) -> tuple[float, float]:
        """(||grad f(x)||, f(x)), the run metrics, sharing the product A x: the same floats as
        float(full_grad(x).norm()) and value(x)."""
        return float(self.full_grad(x).norm()), self.value(x)

    def _rows_dot(self, x: Tensor) -> Tensor:
        """A x over all n rows (CSR); the last product is reused for the same, unmodified x."""
        memo = self._dot_memo
        if memo is not None and memo[0] is x and memo[1] == x._version:
            return memo[2]
        u = self._csr @ x
        self._dot_memo = (x, x._version, u)
        return u

    # --- kernels used by the algorithms ---------------------------------------------------------
    def rows_grad(self, y: Tensor, A: Tensor, b: Tensor) -> Tensor:
        """Mean gradient over the rows A (S,B,d), b (S,B) of client s at y[s]: (S,d).

        Used with minibatch rows already gathered, so a b=1 step costs O(d), not O(M*d).
        """
        coef = self._dloss((A @ y.unsqueeze(-1)).squeeze(-1), b) * (1.0 / b.shape[-1])
        return self._add_reg((coef.unsqueeze(-2) @ A).squeeze(-2), y)

    def batched_rows_grad(self, y: Tensor, A: Tensor, b: Tensor) -> Tensor:
        """rows_grad(y, A, b[..., 0]) for y (S,d), A (S,B,d), b (S,B,1): the same operations on the
        same layouts (A @ y for 3-D operands is this bmm), with fewer reshapes."""
        S, B, d = A.shape
        coef = self._dloss(torch.bmm(A, y.unsqueeze(-1)), b) * (1.0 / B)  # (S,B,1)
        return self._add_reg(torch.bmm(coef.view(S, 1, B), A).view(S, d), y)

    def rows_grad_diff(self, y1: Tensor, y0: Tensor, A: Tensor, b: Tensor) -> Tensor:
        """grad_B f_i(y1) - grad_B f_i(y0) on the same rows B (the PAGE difference, Algorithm 1 lines 17, 21): (S,d).

        y1, y0 have the same shape: (S,d), or (d,) shared by all clients. Both points go through one
        matmul and the difference is taken on the per-row coefficients: about the cost of one gradient.
        """
        u = A @ torch.stack((y1, y0), dim=-1)  # (S,B,2)
        coef = self._dloss(u, b.unsqueeze(-1))
        coef = (coef[..., 0] - coef[..., 1]) * (1.0 / b.shape[-1])
        g = (coef.unsqueeze(-2) @ A).squeeze(-2)
        r1, r0 = self._reg_grad(y1), self._reg_grad(y0)
        return g if r1 is None else g + (r1 - r0)

    def batched_rows_grad_diff(
        self, y1: Tensor, y0: Tensor, A: Tensor, b: Tensor, r0: Tensor | None
    ) -> tuple[Tensor, Tensor | None]:
        """rows_grad_diff(y1, y0, A, b[..., 0]) for y1, y0 (S,d), A (S,B,d), b (S,B,1), given
        r0 = the regularizer gradient at y0 (None without one): the same floats. Returns the
        difference and the regularizer gradient at y1 (the next step's r0)."""
        S, B, d = A.shape
        c1, c0 = self._dloss(torch.bmm(A, torch.stack((y1, y0), dim=-1)), b).unbind(-1)
        coef = (c1 - c0) * (1.0 / B)
        g = torch.bmm(coef.unsqueeze(-2), A).view(S, d)
        r1 = self._reg_grad(y1)
        return (g, None) if r1 is None else (g + (r1 - r0), r1)


class RobustLinearRegression(FiniteSumProblem):
    """loss(u, b) = log(1 + (u-b)^2/2) (paper Sec 6); no regularizer."""

    def _loss(self, u: Tensor, b: Tensor) -> Tensor:
        t = u - b
        return torch.log1p(0.5 * t * t)

    def _dloss(self, u: Tensor, b: Tensor) -> Tensor:
        t = u - b
        return 2.0 * t / (2.0 + t * t)

    def dloss_np(self, u: np.ndarray, b: np.ndarray) -> np.ndarray:
        t = u - b
        return 2.0 * t / (2.0 + t * t)


class LogisticNonconvex(FiniteSumProblem):
    """loss(u, b) = log(1 + exp(-b u)); regularizer alpha * sum_j x_j^2/(1+x_j^2) inside every f_ij."""

    def __init__(self, A: Tensor, b: Tensor, alpha: float) -> None:
        super().__init__(A, b)
        self.alpha = alpha

    def _loss(self, u: Tensor, b: Tensor) -> Tensor:
        # logaddexp(0, z) is exact; softplus switches to z above a threshold.
        z = -b * u
        return torch.logaddexp(torch.zeros_like(z), z)

    def _dloss(self, u: Tensor, b: Tensor) -> Tensor:
        return -b * torch.sigmoid(-b * u)

    def dloss_np(self, u: np.ndarray, b: np.ndarray) -> np.ndarray:
        nb = -b
        return nb * torch.sigmoid(torch.from_numpy(nb * u)).numpy()

    def _reg_value(self, x: Tensor) -> float:
        x2 = x * x
        return self.alpha * float((x2 / (1.0 + x2)).sum())

    def _reg_grad(self, x: Tensor) -> Tensor:
        s = 1.0 + x * x
        return (2.0 * self.alpha) * x / (s * s)

    def reg_grad_np(self, x: np.ndarray) -> np.ndarray:
        s = 1.0 + x * x
        return (2.0 * self.alpha) * x / (s * s)


def make_problem(
    objective: str,
    X: np.ndarray,
    y: np.ndarray,
    *,
    n_clients: int,
    samples_per_client: int,
    partition: str = "contiguous",
    alpha: float = 0.1,
    device: str = "cpu",
) -> FiniteSumProblem:
    """Shard the first n_clients*samples_per_client rows (file order) into equal client shards.

    partition "contiguous": client i gets rows [i*M, (i+1)*M) (paper Sec 6); "label_sorted": the
    retained rows are stably sorted by label first (heterogeneous shards; sensitivity option only).
    `alpha` is the logistic regularizer weight and is ignored for robust regression.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; expected one of {OBJECTIVES}")
    if partition not in PARTITIONS:
        raise ValueError(f"unknown partition {partition!r}; expected one of {PARTITIONS}")
    if n_clients < 1 or samples_per_client < 1:
        raise ValueError(f"need n_clients >= 1 and samples_per_client >= 1, got {n_clients}, {samples_per_client}")
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"expected X (n,d) and y (n,), got {X.shape} and {y.shape}")
    n = n_clients * samples_per_client
    if X.shape[0] < n:
        raise ValueError(
            f"{n_clients} clients x {samples_per_client} samples need {n} rows, the data has only {X.shape[0]}"
        )
    X, y = X[:n], y[:n]
    if partition == "label_sorted":
        order = np.argsort(y, kind="stable")
        X, y = X[order], y[order]
    A = torch.as_tensor(X, device=device).to(torch.float64).reshape(n_clients, samples_per_client, -1)
    b = torch.as_tensor(y, device=device).to(torch.float64).reshape(n_clients, samples_per_client)
    if objective == "robust_linear_regression":
        return RobustLinearRegression(A, b)
    return LogisticNonconvex(A, b, alpha)
