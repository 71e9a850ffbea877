"""Each registry is the single source of its names (issue 26): every `enum` of workflow/schemas/ that lists names
the Python code defines (algorithms, models, datasets, views, backends, the options the engines branch on, papers,
scales, plot kinds, ...) is checked here against the registry that defines them.

REGISTRY_ENUMS pairs each such enum with its registry, all in one place. A schema enum that is in neither
REGISTRY_ENUMS nor NOT_REGISTRIES fails test_every_schema_enum_is_checked_or_excluded, so a new hand copy of a
registry cannot slip in unchecked: give it its registry here (or, where the names are still literals in the code,
make them one module-level constant next to the code that branches on them first)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from fedrepro.algorithms import METHODS
from fedrepro.algorithms.fedavg import STEP_SPLITS
from fedrepro.algorithms.probabilistic_agents import ACTIVATION_KINDS, Sampling
from fedrepro.algorithms.fedcluster import CLUSTER_ORDERS, FC_LR_RULES
from fedrepro.algorithms.fedvr import ETA_SCHEDULES
from fedrepro.asynchrony import PROTOCOLS, SPEED_MODELS
from fedrepro.claims.sequential import MODES
from fedrepro.data.formats.insurance import HEADER as INSURANCE_COLUMNS
from fedrepro.data.multiview import CHANNEL_MODES
from fedrepro.data.partitions import REMAINDERS
from fedrepro.data.registry import REGISTRY as DATASETS
from fedrepro.data.views import VIEWS
from fedrepro.engines import asynchronous, federated_nn, vertical
from fedrepro.engines.vertical_inputs import IMAGE_NORMS
from fedrepro.experiments.runtable import DRAWING_FORMATS, FIGURE_KINDS
from fedrepro.models import MODELS
from fedrepro.nn import BACKENDS, OPTIMIZERS
from fedrepro.nn.silos import SILO_BACKENDS
from fedrepro.objectives import OBJECTIVES, PARTITIONS as FINITE_SUM_PARTITIONS
from fedrepro.objectives.least_squares import Rows, Scaling, ScalingRows
from fedrepro.plots import KINDS, mc_lines
from fedrepro.plots.loss_accuracy import LEGENDS
from fedrepro.plots.table import NEVER, SUMMARIES
from fedrepro.results.summaries import SEED_AGGREGATES
from fedrepro.results.tables import ROWS
from fedrepro.schemas import DEVICES, SCALES, SCHEMA_DIR
from fedrepro.variants.tune import GOALS

CONFIG = Path(__file__).resolve().parents[1] / "config"

SAME = "=="  # the enum is the registry
WITHIN = "<="  # the enum is part of a registry that several engines share: the names its paper's runs use


def allowed(protocol: str, option: str) -> tuple:
    """The values asynchrony/simulate.py PROTOCOLS accepts for a protocol's option."""
    return PROTOCOLS[protocol].options[option].allowed


# schemas.known_papers reads config.schema.yaml `papers` itself: the copies of that list are the paper files
PAPER_FILES = sorted(path.stem for path in (CONFIG / "papers").glob("*.yaml"))
# client_backend of nn/clients.py (the federated_nn and async engines') and silo_backend of nn/silos.py: `auto` is the
# engine's own rule, the others the client layer's backends (nn/clients.py BACKENDS, nn/silos.py SILO_BACKENDS)
CLIENT_BACKENDS = ("auto", *BACKENDS)
SILO_BACKEND_CHOICES = ("auto", *SILO_BACKENDS)
PLOT_KINDS = tuple(FIGURE_KINDS)  # experiments/runtable.py, the one table of kinds
MC_LINES_KINDS = tuple(kind for kind, build in KINDS.items() if build.__module__ == mc_lines.__name__)

# (schema file without .schema.yaml, keys to its `enum` joined by "/", relation, the registry: names, or a mapping
# whose keys are the names)
REGISTRY_ENUMS: list[tuple[str, str, str, Any]] = [
    # -- config.schema.yaml (config/config.yaml)
    ("config", "properties/papers/items", SAME, PAPER_FILES),
    ("config", "properties/scale", SAME, SCALES),  # schemas.py
    ("variants", "properties/scale", SAME, SCALES),
    ("variants", "properties/select/properties/goal", SAME, GOALS),  # variants/tune.py
    ("config", "properties/device", SAME, DEVICES),  # experiments/__init__.py (engines/context.py resolve_device)
    ("config", "properties/seed_plan", SAME, MODES),  # claims/sequential.py
    # -- paper.schema.yaml (config/papers/<paper>.yaml)
    ("paper", "$defs/plot/properties/kind", SAME, PLOT_KINDS),
    ("paper", "$defs/mc_error_plot/properties/kind", SAME, MC_LINES_KINDS),  # the kinds plots/mc_lines.py draws
    ("paper", "$defs/mc_variance_plot/properties/kind", SAME, MC_LINES_KINDS),  # (a YAML alias of mc_error_plot)
    ("paper", "$defs/loss_accuracy_plot/properties/legend", SAME, LEGENDS),  # plots/loss_accuracy.py
    ("paper", "$defs/table_plot/properties/never", SAME, NEVER),  # plots/table.py
    ("paper", "$defs/table_plot/properties/value/properties/summary", SAME, SUMMARIES),  # plots/table.py
    ("paper", "$defs/table_plot/properties/value/then/properties/seeds", SAME, SEED_AGGREGATES),  # results/summaries.py
    # -- finite_sum_run.schema.yaml (engines/finite_sum.py)
    ("finite_sum_run", "properties/algorithm", SAME, METHODS["finite_sum"]),  # algorithms/__init__.py
    ("finite_sum_run", "properties/step_split", SAME, STEP_SPLITS),  # algorithms/fedavg.py
    ("finite_sum_run", "properties/dataset", WITHIN, DATASETS),  # data/registry.py
    ("finite_sum_run", "properties/objective", SAME, OBJECTIVES),  # objectives/finite_sum.py
    ("finite_sum_run", "properties/partition", SAME, FINITE_SUM_PARTITIONS),  # objectives/finite_sum.py
    # -- monte_carlo_run.schema.yaml (engines/monte_carlo.py)
    ("monte_carlo_run", "properties/algorithm", SAME, METHODS["monte_carlo"]),
    ("monte_carlo_run", "properties/dataset", WITHIN, DATASETS),
    # the columns of insurance.csv (data/formats/insurance.py): the paper's target and the features it regresses on
    ("monte_carlo_run", "properties/features/items", WITHIN, INSURANCE_COLUMNS),
    ("monte_carlo_run", "properties/target", WITHIN, INSURANCE_COLUMNS),
    ("monte_carlo_run", "properties/scaling", SAME, get_args(Scaling)),  # objectives/least_squares.py
    ("monte_carlo_run", "properties/scaling_rows", SAME, get_args(ScalingRows)),  # objectives/least_squares.py
    ("monte_carlo_run", "properties/rows", SAME, get_args(Rows)),  # objectives/least_squares.py
    ("monte_carlo_run", "properties/activation/properties/kind", SAME, ACTIVATION_KINDS),  # algorithms/probabilistic_agents.py
    ("monte_carlo_run", "properties/eta_schedule", SAME, ETA_SCHEDULES),  # algorithms/fedvr.py
    ("monte_carlo_run", "properties/sampling", SAME, get_args(Sampling)),  # algorithms/probabilistic_agents.py
    # -- federated_nn_run.schema.yaml (engines/federated_nn.py)
    ("federated_nn_run", "properties/algorithm", SAME, METHODS["federated_nn"]),
    ("federated_nn_run", "properties/dataset", WITHIN, DATASETS),
    ("federated_nn_run", "properties/view", WITHIN, VIEWS),  # data/views.py
    ("federated_nn_run", "properties/model", WITHIN, MODELS),  # models/__init__.py
    ("federated_nn_run", "properties/remainder", SAME, REMAINDERS),  # data/partitions.py
    ("federated_nn_run", "properties/clustering", SAME, federated_nn.CLUSTERINGS),
    ("federated_nn_run", "properties/cluster_order", SAME, CLUSTER_ORDERS),  # algorithms/fedcluster.py
    ("federated_nn_run", "properties/local_opt", SAME, OPTIMIZERS),  # nn/optim.py
    ("federated_nn_run", "properties/fc_lr_rule", SAME, FC_LR_RULES),  # algorithms/fedcluster.py
    ("federated_nn_run", "properties/backend", SAME, CLIENT_BACKENDS),
    # -- async_run.schema.yaml (engines/asynchronous.py)
    ("async_run", "properties/algorithm", SAME, METHODS["async"]),
    ("async_run", "properties/dataset", WITHIN, DATASETS),
    ("async_run", "properties/view", WITHIN, VIEWS),
    ("async_run", "properties/model", WITHIN, MODELS),
    ("async_run", "properties/partition", SAME, asynchronous.PARTITIONS),
    ("async_run", "properties/fedavg_duplicates", SAME, allowed("fedavg", "fedavg_duplicates")),
    ("async_run", "properties/fedbuff_staleness", SAME, allowed("fedbuff", "fedbuff_staleness")),
    ("async_run", "properties/niid_send_buffer", SAME, allowed("defedavg_niid", "niid_send_buffer")),
    ("async_run", "properties/favano_reweight", SAME, allowed("favano", "favano_reweight")),
    ("async_run", "properties/speed_model", SAME, SPEED_MODELS),  # asynchrony/system.py
    ("async_run", "properties/backend", SAME, CLIENT_BACKENDS),
    # -- vertical_run.schema.yaml (engines/vertical.py)
    ("vertical_run", "properties/image_channels", SAME, CHANNEL_MODES),  # data/multiview.py
    ("vertical_run", "properties/image_norm", SAME, IMAGE_NORMS),  # engines/vertical_inputs.py
    ("vertical_run", "properties/model", WITHIN, MODELS),
    ("vertical_run", "properties/test_metric", SAME, vertical.TEST_METRIC),
    ("vertical_run", "properties/dtype", SAME, vertical.DTYPES),
    ("vertical_run", "properties/client_assignment", SAME, vertical.CLIENT_ASSIGNMENTS),
    ("vertical_run", "properties/backend", SAME, SILO_BACKEND_CHOICES),
]

# Enums whose names no Python registry defines, with the reason.
NOT_REGISTRIES: dict[tuple[str, str], str] = {
    ("config", "properties/readings"):
        "a choice only the schema defines: experiments/runtable.py reads it by one `== 'all'`",
    ("finite_sum_run", "properties/x0"):
        "no code reads it (the server model always starts at 0, algorithms/common.py): the schema pins the one "
        "value so that a run's spec states it",
    ("paper", "properties/readings/additionalProperties/properties/source"):
        "labels of where a reading's choice comes from, printed as given; the claims ledger branches on "
        "`assumption` alone (claims/ledger.py)",
}


def schema_enums() -> dict[tuple[str, str], list]:
    """Every `enum` of workflow/schemas/*.schema.yaml by (schema, keys joined by "/")."""
    found: dict[tuple[str, str], list] = {}

    def walk(schema: str, node: Any, keys: tuple[str, ...]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "enum":
                    found[(schema, "/".join(keys))] = value
                else:
                    walk(schema, value, (*keys, str(key)))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(schema, value, (*keys, str(i)))

    for path in sorted(SCHEMA_DIR.glob("*.schema.yaml")):
        walk(path.name.removesuffix(".schema.yaml"), yaml.safe_load(path.read_text()), ())
    return found


ENUMS = schema_enums()


@pytest.mark.parametrize("schema, path, relation, registry", REGISTRY_ENUMS,
                         ids=[f"{schema}:{path}" for schema, path, *_ in REGISTRY_ENUMS])
def test_a_schema_enum_lists_the_names_of_its_registry(schema, path, relation, registry):
    enum, names = set(ENUMS[(schema, path)]), set(registry)
    assert len(enum) == len(ENUMS[(schema, path)]), f"{schema}.schema.yaml {path}: a name listed twice"
    assert enum - names == set(), f"{schema}.schema.yaml {path} accepts names the code does not define"
    if relation == SAME:
        assert names - enum == set(), f"{schema}.schema.yaml {path} rejects names the code defines"


def test_every_schema_enum_is_checked_or_excluded():
    listed = [(schema, path) for schema, path, *_ in REGISTRY_ENUMS]
    assert len(set(listed)) == len(listed), "an enum listed twice in REGISTRY_ENUMS"
    assert set(listed) & set(NOT_REGISTRIES) == set()
    unchecked = set(ENUMS) - set(listed) - set(NOT_REGISTRIES)
    assert unchecked == set(), ("pair each new enum with its registry in REGISTRY_ENUMS, or, if no code defines "
                                "its names, add it to NOT_REGISTRIES with the reason")
    assert (set(listed) | set(NOT_REGISTRIES)) - set(ENUMS) == set(), "entries of enums the schemas no longer have"


def test_every_model_is_accepted_by_some_engine():
    """A model of models/__init__.py MODELS that no engine's schema accepts cannot be run."""
    accepted = set().union(*(ENUMS[(schema, path)] for schema, path, _, registry in REGISTRY_ENUMS
                             if registry is MODELS))
    assert accepted == set(MODELS), f"no schema accepts {sorted(set(MODELS) - accepted)}"


def test_every_paper_defines_the_scales():
    """paper.schema.yaml `scales` names the scales (not an enum: one key each)."""
    scales = yaml.safe_load((SCHEMA_DIR / "paper.schema.yaml").read_text())["properties"]["scales"]
    assert set(scales["required"]) == set(scales["properties"]) == set(SCALES)


def test_every_drawn_kind_has_its_builder_and_every_builder_its_kind():
    """experiments/runtable.py FIGURE_KINDS is the one table of plot kinds; plots/__init__.py KINDS draws exactly
    those written as drawings, and results/tables.py ROWS gives every kind's rows."""
    drawn = {kind for kind, what in FIGURE_KINDS.items() if what.formats == DRAWING_FORMATS}
    assert set(KINDS) == drawn and "table" not in drawn
    assert {what.rows for what in FIGURE_KINDS.values()} <= set(ROWS)
