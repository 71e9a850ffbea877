"""Every method of every engine, in one registry: METHODS[engine][name] is the entry that builds a run's method
(its `algorithm` setting) in one way, `build(spec, env, streams) -> Method` (algorithms/method.py). The `env` each
engine gives its methods:

    finite_sum     FiniteSumProblem (objectives/)     FedPAGE, SCAFFOLD, FedAvg (the FedPAGE paper)
    monte_carlo    fedvr.Runs                         FedAvg-SVRG and its two FedAvg baselines (the fedvr paper)
    federated_nn   fedcluster.Devices                 FedCluster, FedAvg, centralized SGD (the FedCluster paper)
    async          asynchronous.Fleet                 the DeFedAvg paper's six methods on the simulated clock
    vertical       tdcd.Tiers                         TDCD

Adding a method is its class or record and one line here, then the places docs/development.md "Adding a method"
lists; the run schema's `algorithm` enum is tied to this registry by tests/test_schema_registries.py, and every
test that builds methods (the shape test, the finite-sum protocol tests) reads it. An entry's `settings` are the
run settings only it reads among its engine's methods: the engine refuses them on the others' runs.
"""

from __future__ import annotations

from typing import Any

from fedrepro.algorithms import fedcluster, fedvr
from fedrepro.algorithms.asynchronous import AsyncAlgorithm
from fedrepro.algorithms.fedavg import FedAvg
from fedrepro.algorithms.fedpage import FedPAGE
from fedrepro.algorithms.method import Builder
from fedrepro.algorithms.scaffold import Scaffold
from fedrepro.algorithms.tdcd import TDCD
from fedrepro.asynchrony import PROTOCOLS
from fedrepro.errors import ConfigError

METHODS: dict[str, dict[str, Builder]] = {
    "finite_sum": {"fedpage": FedPAGE, "scaffold": Scaffold, "fedavg": FedAvg},
    "monte_carlo": {
        "fedavg_svrg": fedvr.AgentsMethod(fedvr.fedavg_svrg, ("delta",)),
        "fedavg_prob": fedvr.AgentsMethod(fedvr.fedavg_prob, fedvr.BASELINE_SETTINGS),
        "fedavg_uniform": fedvr.AgentsMethod(fedvr.fedavg_uniform, (*fedvr.BASELINE_SETTINGS, "agents_per_round")),
    },
    "federated_nn": {"fedavg": fedcluster.FedAvg, "fedcluster": fedcluster.FedCluster,
                     "csgd": fedcluster.CentralizedSGD},
    "async": {a.name: a for a in (
        AsyncAlgorithm(PROTOCOLS["fedavg"], "FedAvg"),
        AsyncAlgorithm(PROTOCOLS["defedavg_niid"], "DeFedAvg-nIID"),
        AsyncAlgorithm(PROTOCOLS["defedavg_iid"], "DeFedAvg-IID"),
        AsyncAlgorithm(PROTOCOLS["fedbuff"], "FedBuff"),
        AsyncAlgorithm(PROTOCOLS["favano"], "FAVANO", global_lr=False),
        AsyncAlgorithm(PROTOCOLS["asysg"], "AsySG", sends_gradient=True),
    )},
    "vertical": {"tdcd": TDCD},  # its runs name no `algorithm`: the engine's one method
}


def foreign_settings(engine: str, spec: dict[str, Any]) -> list[str]:
    """The settings of a run that only other methods of its engine read (their entries' `settings`): the run's
    method would ignore them, silently, so the engine refuses them (engines/contract.py check_limits). An entry
    declares the run settings that it reads and some other method of its engine does not; one that declares none
    (the network and vertical methods) is not checked."""
    entries = METHODS[engine].values()
    others = {key for entry in entries for key in getattr(entry, "settings", ())}
    own = set(getattr(method(engine, spec.get("algorithm")), "settings", ()))
    return sorted((others - own) & set(spec))


def method(engine: str, name: str | None = None) -> Builder:
    """The entry of `engine`'s method `name` (a run's `algorithm`); without a name, the engine's only method."""
    methods = METHODS.get(engine)
    if methods is None:
        raise ConfigError(f"unknown engine {engine!r}; expected one of {', '.join(METHODS)}")
    if name is None and len(methods) == 1:
        return next(iter(methods.values()))
    if name not in methods:
        raise ConfigError(f"unknown method {name!r} of engine {engine}; expected one of {', '.join(sorted(methods))}")
    return methods[name]


__all__ = ["METHODS", "foreign_settings", "method"]
