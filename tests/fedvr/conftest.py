"""Fixtures for the fedvr (Rostami & Kia) tests: synthetic problems and the insurance data."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import torch

from fedrepro.seeding import torch_generator
from fedrepro.objectives.least_squares import LeastSquaresProblem

REPO = Path(__file__).resolve().parents[2]


def read_insurance_csv(path: Path) -> dict[str, np.ndarray]:
    """The prepared-columns dict the data layer hands to make_insurance_problem."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    regions = sorted({r["region"] for r in rows})
    return {
        "age": np.array([float(r["age"]) for r in rows]),
        "sex": np.array([r["sex"] == "male" for r in rows], dtype=np.int8),
        "bmi": np.array([float(r["bmi"]) for r in rows]),
        "children": np.array([float(r["children"]) for r in rows]),
        "smoker": np.array([r["smoker"] == "yes" for r in rows], dtype=np.int8),
        "region": np.array([regions.index(r["region"]) for r in rows], dtype=np.int8),
        "region_names": np.array(regions),
        "charges": np.array([float(r["charges"]) for r in rows]),
    }


@pytest.fixture(scope="session")
def insurance_columns() -> dict[str, np.ndarray]:
    mirror = Path(os.environ.get("FEDREPRO_DATA_MIRROR", REPO.parent / "shared" / "datasets"))
    path = mirror / "insurance" / "insurance.csv"
    if not path.exists():
        pytest.skip(f"insurance mirror not found at {path}")
    return read_insurance_csv(path)


def _random_problem(n_agents: int = 4, samples: int = 6, dim: int = 3, seed: int = 0) -> LeastSquaresProblem:
    gen = torch.Generator().manual_seed(seed)
    Q = torch.rand(n_agents, samples, dim, generator=gen, dtype=torch.float64)
    Y = torch.rand(n_agents, samples, generator=gen, dtype=torch.float64)
    return LeastSquaresProblem.from_data(Q, Y)


def _streams(run: str) -> Callable[[str, int, int], torch.Generator]:
    return lambda purpose, mc, k: torch_generator(run, purpose, mc, k)


# Factories as fixtures (not imports) so that no test imports a module named `conftest`.
@pytest.fixture
def random_problem() -> Callable[..., LeastSquaresProblem]:
    return _random_problem


@pytest.fixture
def streams() -> Callable[[str], Callable[[str, int, int], torch.Generator]]:
    return _streams


# --- pipeline tests (engine, claims, plots) -------------------------------------------------


def _mc_table(*curves: dict, figure: str = "f") -> "pd.DataFrame":
    """A figure table as rule aggregate writes it for the monte_carlo engine.

    Each curve: panel, curve, method, cost (R, K+1), theta_final (R, d), theta_star (d,), f_star;
    θ_k of every round is set to θ_final (only the last round matters to the checks and plots).
    """
    import pandas as pd

    rows = []
    for c in curves:
        cost, final = np.asarray(c["cost"], dtype=float), np.asarray(c["theta_final"], dtype=float)
        run_id = c.get("run_id", f"{c['panel']}-{c['method']}")
        for r in range(cost.shape[0]):
            for k in range(cost.shape[1]):
                row = {"figure": figure, "panel": c["panel"], "curve": c["curve"], "method": c["method"],
                       "run_id": run_id, "seed": r, "round": k, "cost": cost[r, k], "cost_error": cost[r, k] - c["f_star"]}
                row.update({f"theta_{i}": v for i, v in enumerate(final[r])})
                row.update({f"theta_star_{i}": v for i, v in enumerate(c["theta_star"])})
                row["diverged"] = not np.isfinite(cost[r]).all()
                rows.append(row)
    return pd.DataFrame(rows)


@pytest.fixture
def mc_table() -> Callable[..., "pd.DataFrame"]:
    return _mc_table


@pytest.fixture
def insurance_like() -> dict[str, np.ndarray]:
    """Columns shaped like the prepared insurance.npz (file order), 60 synthetic persons."""
    rng = np.random.default_rng(3)
    n = 60
    age, bmi = rng.integers(18, 65, n).astype(float), rng.uniform(16, 48, n)
    sex, smoker = rng.integers(0, 2, n).astype(np.int8), (rng.random(n) < 0.2).astype(np.int8)
    children = rng.integers(0, 5, n).astype(float)
    charges = 250 * age + 300 * bmi + 23000.0 * smoker + 500 * children + rng.normal(0, 3000, n) + 2000
    return {"age": age, "sex": sex, "bmi": bmi, "children": children, "smoker": smoker,
            "region": rng.integers(0, 4, n).astype(np.int8),
            "region_names": np.array(["northeast", "northwest", "southeast", "southwest"]), "charges": charges}
