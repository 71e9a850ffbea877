"""Fixtures for the fedvr (Rostami & Kia) tests: synthetic problems and the insurance data."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import torch

from fedrepro.experiments.seeding import torch_generator
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
