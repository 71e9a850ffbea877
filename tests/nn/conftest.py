"""Fixtures for the neural-network engine tests."""

from __future__ import annotations

import pytest
import torch

from nn_testdata import SHAPES, Problem, make_problem


@pytest.fixture(autouse=True)
def single_thread():
    """Tiny tensors: intra-op threads only add synchronisation, and on a busy CPU they wait for slices."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(params=sorted(SHAPES))
def problem(request) -> Problem:
    return make_problem(request.param)
