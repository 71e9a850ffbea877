"""Metrics behind the `fedvr` paper's Figs 3-9 (paper §VI; docs/papers/fedvr.md R10).

- cost curves: err[r,k] = f(θ_k^r) − f*, mean_err[k] (thick line), sqdev[r,k] =
  (f(θ_k^r) − mean_r f(θ_k^r))² (thin variance lines) and var[k] = mean_r sqdev (ddof=0,
  the thick line is literally "the mean of Monte Carlo iterations");
- CEP, circular error probable: "the radius of a circle, centered on the mean, whose
  perimeter is expected to include the landing points of 50% of the rounds; said
  otherwise, it is the median error radius". Applied to the final iterates θ_K^r.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

# The CEP plot shows θ_K projected on (θ_1, θ_2) = (age, sex) coefficients (the paper does not say which
# two: docs/papers/fedvr.md R10).
CEP_COORDS: tuple[int, int] = (0, 1)


def cep_radius(points: np.ndarray, center: np.ndarray | None = None) -> float:
    """Median Euclidean distance of points (n, D) from `center` (default: their mean).

    With an even n the median is the mean of the two middle radii (np.median).
    """
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2 or len(points) == 0:
        raise ValueError(f"need a non-empty (n, D) point array, got shape {points.shape}")
    center = points.mean(axis=0) if center is None else np.asarray(center, dtype=np.float64)
    return float(np.median(np.linalg.norm(points - center, axis=1)))


def cep_metrics(
    theta_final: np.ndarray, cost_final: np.ndarray, coords: Sequence[int] = CEP_COORDS
) -> dict[str, float]:
    """cep_2d (projection on `coords`, primary), cep_full (all of R^d) and cep_cost
    (median |f − mean f|, informational) of the final iterates (R, d) and costs (R,)."""
    theta_final = np.asarray(theta_final, dtype=np.float64)
    cost_final = np.asarray(cost_final, dtype=np.float64)
    return {
        "cep_2d": cep_radius(theta_final[:, list(coords)]),
        "cep_full": cep_radius(theta_final),
        "cep_cost": cep_radius(cost_final[:, None]),
    }


def cost_curves(cost: np.ndarray, f_star: float) -> dict[str, np.ndarray]:
    """Per-run errors and across-run statistics of cost (R, K+1)."""
    cost = np.asarray(cost, dtype=np.float64)
    err = cost - f_star
    sqdev = (cost - cost.mean(axis=0)) ** 2
    return {"err": err, "mean_err": err.mean(axis=0), "sqdev": sqdev, "var": sqdev.mean(axis=0)}
