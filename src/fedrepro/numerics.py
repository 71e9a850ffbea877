"""What each engine declares of its numerics that jobs loading no engine read: its numerics version and which
settings key its random streams.

The numerics version is the number to bump when a change alters any value an engine writes (docs/development.md,
"Numerics versions"). A non-zero version enters the run id of every run of its engine, so the results of new
numerics never sit under an old id and every one of them is retrained. 0, each engine's version until its
numerics first change, enters no id, so the ids made before versions existed stand.

The keying (seeding.Keying) is the one declaration of which settings key an engine's streams: the run's streams
(engines/context.py RunContext.streams) and every draw the engine keys apart (its data's partition, the simulated
fleet, TDCD's minibatches) read it, and so do the claims that pool draws (claims/checks/final_values.py
participation_rate) and the tunings, whose trials are paired when the settings they tune key no stream.

Both tables live here, not on the engines, because run ids, claims and tables are computed by jobs that load no
engine (and no torch); an engine reads its own entries (Engine.numerics, Engine.keying).
"""

from __future__ import annotations

from fedrepro.seeding import Keying

# engine name -> its numerics version; an engine not listed is at 0
VERSIONS: dict[str, int] = {
    "finite_sum": 1,  # 2026-11-26: streams keyed by every setting but the step sizes (trials paired)
}


# engine -> which settings key its random streams (seeding.Keying). The network engines' streams are keyed by the
# settings that decide the data alone (the devices or clients, their partition), never by the method or its rates:
# the runs of one environment that differ in the method are paired (docs/papers/fedcluster.md R3, defedavg.md R24).
KEYING: dict[str, Keying] = {
    # all but the step sizes, since version 1 (before it, every setting): a tuning's trials draw the same clients,
    # minibatches and coins
    "finite_sum": Keying(ignored=("eta_tilde", "c_l", "step_split")),
    # all but the algorithm's settings (algorithms/fedvr.py DEFAULT_HP less the environment's activation and theta0)
    # and `rounds` (a shorter run is a prefix of a longer one): every method sees the same activations (fedvr.md R9)
    "monte_carlo": Keying(ignored=("method", "algorithm", "S", "M", "delta", "K", "eta_schedule", "eta", "local_steps",
                                   "batch_size", "sampling", "agents_per_round", "rounds")),
    "federated_nn": Keying(only=("dataset", "view", "n_devices", "samples_per_device", "rho_device", "remainder",
                                 "n_classes")),
    # the simulated fleet (client speeds, the server's draws) by the paper, data and N alone: every algorithm and
    # every rate of a seed runs on the same clock
    "async": Keying(only=("dataset", "view", "n_classes", "n_clients", "samples_per_client", "partition",
                          "classes_per_client"),
                    draws={"timing": ("paper", "dataset", "n_clients")}),
    # every draw by the data and its own settings, never by lr or Q (docs/papers/tdcd.md R12)
    "vertical": Keying(only=(), draws={
        "assignment": ("dataset", "view", "K", "client_assignment"),
        "batches": ("dataset", "view", "B"),
        "train_eval": ("dataset", "view", "train_eval_subsample"),
        "test_eval": ("dataset", "view", "test_eval_subsample"),
        "train_subset": ("dataset", "view", "image_channels", "image_side", "train_subset"),
        "test_subset": ("dataset", "view", "image_channels", "image_side", "test_subset"),
    }),
}


def numerics_version(engine: str) -> int:
    return VERSIONS.get(engine, 0)


def keying(engine: str) -> Keying:
    """The engine's keying; every setting keys the streams of an engine that declares none."""
    return KEYING.get(engine, Keying())
