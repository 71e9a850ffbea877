"""Engines, one per kind of experiment, all on one contract (contract.py) and one run loop (driver.py).

ENGINES is the one list that execution, validation, the Snakemake rules and the schemas read.
"""

from __future__ import annotations

from fedrepro.engines.asynchronous import AsyncEngine
from fedrepro.engines.contract import Engine
from fedrepro.engines.federated_nn import NetworkEngine
from fedrepro.engines.finite_sum import FiniteSumEngine
from fedrepro.engines.monte_carlo import MonteCarloEngine
from fedrepro.engines.vertical import VerticalEngine

ENGINES: dict[str, Engine] = {engine.name: engine for engine in (FiniteSumEngine(), MonteCarloEngine(),
                                                                  NetworkEngine(), AsyncEngine(),
                                                                  VerticalEngine())}

__all__ = ["ENGINES", "Engine"]
