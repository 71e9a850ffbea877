"""CEP and the cost-curve statistics of the fedvr figures."""

from __future__ import annotations

import numpy as np
import pytest

from fedrepro.results.cep import cep_metrics, cep_radius, cost_curves


def test_points_on_a_circle_have_cep_equal_to_the_radius():
    angles = np.linspace(0, 2 * np.pi, 20, endpoint=False)
    center, r = np.array([0.3, -1.2]), 0.0029
    points = center + r * np.column_stack([np.cos(angles), np.sin(angles)])
    assert cep_radius(points) == pytest.approx(r, rel=1e-9)
    assert cep_radius(points, center=center) == pytest.approx(r, rel=1e-12)


def test_symmetric_sets_and_even_count_median():
    # Mean 0; radii 1, 1, 3, 3 -> the median of an even count is the mean of the middle two.
    points = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 3.0], [0.0, -3.0]])
    assert cep_radius(points) == pytest.approx(2.0)
    # Odd count around an off-mean centre: radii 0, 0, 5, 5, 1 -> median 1.
    points = np.array([[1.0, 0.0], [1.0, 0.0], [6.0, 0.0], [-4.0, 0.0], [0.0, 0.0]])
    assert cep_radius(points, center=[1.0, 0.0]) == pytest.approx(1.0)


def test_cep_metrics_project_on_the_first_two_coordinates():
    theta = np.zeros((4, 5))
    theta[:, 2:] = np.array([10.0, -10.0, 10.0, -10.0])[:, None]  # spread only outside (θ1, θ2)
    theta[:, 0] = [1.0, -1.0, 1.0, -1.0]
    metrics = cep_metrics(theta, np.array([0.0, 2.0, 4.0, 6.0]))
    assert metrics["cep_2d"] == pytest.approx(1.0)
    assert metrics["cep_full"] == pytest.approx(np.sqrt(1 + 3 * 100))
    assert metrics["cep_cost"] == pytest.approx(2.0)  # |f - 3| = 3, 1, 1, 3
    assert cep_metrics(theta, np.zeros(4), coords=(2, 3))["cep_2d"] == pytest.approx(np.sqrt(200))


def test_cost_curves():
    cost = np.array([[1.0, 0.5, 0.2], [1.0, 0.7, 0.4]])
    curves = cost_curves(cost, f_star=0.1)
    np.testing.assert_allclose(curves["mean_err"], [0.9, 0.5, 0.2])
    np.testing.assert_allclose(curves["var"], cost.var(axis=0))  # ddof = 0
    np.testing.assert_allclose(curves["sqdev"], [[0, 0.01, 0.01], [0, 0.01, 0.01]], atol=1e-15)
    assert curves["var"][0] == 0.0
