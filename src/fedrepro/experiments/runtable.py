"""Resolve the configuration into the run table: every figure's curves and their run specs.

A run spec is the merge, in this order, of the paper's `defaults`, the panel's base settings,
the method preset, the panel's `set`, the curve and one value of the figure's grid. Its run_id
is a hash of the spec, so two figures that need the same run share it, and any change of a
setting gives a new run_id (stale results are never mixed in).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedrepro.data.inputs import MULTIVIEW_DATASETS, prepared_path, provenance_path
from fedrepro.data.registry import RAW_DIR
from fedrepro.data.sources import STAND_INS, USER_DATASETS, DataSource, resolve_source
from fedrepro.errors import ConfigError
from fedrepro.layout import Layout
from fedrepro.numerics import numerics_version
from fedrepro.seeding import seeds_of
from fedrepro.utils.digest import config_digest
from fedrepro.utils.patch import patched
from fedrepro.utils.yaml_file import read_yaml
from fedrepro.experiments.variant_files import TUNING, load_variants, seed_range, tuned_settings

# Keys that describe how a curve is shown, not what is computed: kept out of the run spec.
PRESENTATION_KEYS = ("label",)
# Settings read only by figures and claims (e.g. the accuracy a time-to-target counts to): a column of the
# figure table taken from the configuration as it is now, never part of the run spec, its run_id or run.json,
# so changing one recomputes tables and claims without retraining.
# `x_source`: the metrics column a panel's curves are drawn against, copied into the figure's x column by
# the figure table (results/tables.py), e.g. TDCD's time axis at t_comm = 10 or 100 of the same runs.
ANALYSIS_KEYS = ("target_accuracy", "x_source")
# Keys that change how a run is executed but not its results: kept out of the run_id.
OPERATIONAL_KEYS = ("checkpoint_every",)
# Settings kept out of the run_id at their default value, so that adding one changed no id of the runs before it
# (`first_seed`: seeding.seeds_of).
ID_DEFAULTS = {"first_seed": 0}
# Columns of a figure table that say which curve a row belongs to; the runs' settings follow them.
LABEL_COLUMNS = ["figure", "panel", "curve", "method", "run_id"]
# The label column, in a figure whose runs got seeds from the adaptive seed plan only, of each curve's seeds at the
# first look (its own run's; the column `seeds` then counts every seed the curve has: claims/seed_plan.py)
FIRST_LOOK_SEEDS = "first_look_seeds"
DRAWING_FORMATS = ("pdf", "png")


@dataclass(frozen=True)
class FigureKind:
    """What a figure of a plot kind is: the rows one run gives its table (results/tables.py ROWS: its metrics, its
    timeline intervals or its timing trace's clients), the files it is written as and the report's group for it.
    Each drawn kind has its builder in plots/__init__.py KINDS."""
    group: str
    rows: str = "metrics"
    formats: tuple[str, ...] = DRAWING_FORMATS
    shown: str = "png"  # the format its report page shows (rule figure_page)


# Every plot kind (paper.schema.yaml `plot.kind` lists the same): the one table of kinds
FIGURE_KINDS = {
    "convergence": FigureKind("convergence curves"),
    "loss_accuracy": FigureKind("training curves"),
    "mc_error": FigureKind("Monte Carlo statistics"),
    "mc_variance": FigureKind("Monte Carlo statistics"),
    "cep": FigureKind("Monte Carlo statistics"),
    "gantt": FigureKind("timelines and participation", rows="timeline"),
    "clients": FigureKind("timelines and participation", rows="clients"),
    "table": FigureKind("tables", formats=("csv", "md", "tex"), shown="md"),  # a table, not a drawing (plots/table.py)
}


@dataclass(frozen=True)
class Curve:
    panel: str
    label: str
    method: str
    run_id: str
    grid: dict[str, Any]  # the grid values that distinguish curves of one method (e.g. eta_tilde)
    analysis: dict[str, Any] = field(default_factory=dict)  # its ANALYSIS_KEYS settings
    paper: dict[str, Any] = field(default_factory=dict)  # the paper's value of each setting its scale maps


def paper_column(key: str) -> str:
    """The figure table's column beside a setting that a scale's `values` map: the paper's value its runs stand
    for (n = 2 of 20 clients: n_paper = 10), carried from the configuration, so nothing inverts the map."""
    return f"{key}_paper"


@dataclass
class Figure:
    paper: str
    name: str
    title: str
    caption: str
    scale: str
    deviations: list[str]
    plot: dict[str, Any]
    curves: list[Curve] = field(default_factory=list)
    setting_keys: list[str] = field(default_factory=list)  # the runs' scalar settings, columns of its table
    values: dict[str, dict[Any, Any]] = field(default_factory=dict)  # the scale's value maps: paper value -> this scale's
    stand_ins: list[str] = field(default_factory=list)  # the stand-in data its runs read (data/sources.py labels)
    paper_keys: list[str] = field(default_factory=list)  # the settings its scale maps: a paper_column each
    # run id -> the runs the adaptive seed plan adds to it, each {run_id, first_seed, seeds, claims}
    # (claims/seed_plan.py planned_table); out of the repr, which Snakemake compares: the settings digests hold them
    extensions: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)

    def curve_labels(self, curve: Curve, spec: dict[str, Any]) -> dict[str, Any]:
        """The label columns of a curve's rows in the figure table, from its run's spec: what the
        table says of how the curve was made (results/tables.py); its ANALYSIS_KEYS from the config. In a figure
        with added seeds (extensions), `seeds` counts all of the curve's and FIRST_LOOK_SEEDS its run's own."""
        labels = {"figure": self.name, "panel": curve.panel, "curve": curve.label, "method": curve.method,
                  "run_id": curve.run_id}
        labels.update({k: spec.get(k) for k in self.setting_keys})
        labels.update(curve.analysis)
        labels.update({paper_column(k): curve.paper.get(k) for k in self.paper_keys})
        if self.extensions:
            labels.update({"seeds": self.curve_seeds(curve.run_id, spec), FIRST_LOOK_SEEDS: spec["seeds"]})
        return labels

    def curve_runs(self, run_id: str) -> list[str]:
        """The runs a curve reads: its own, then those that add seeds to it (extensions)."""
        return [run_id, *(e["run_id"] for e in self.extensions.get(run_id, []))]

    def curve_seeds(self, run_id: str, spec: dict[str, Any]) -> int:
        """The seeds of the curve of run `run_id` (whose spec is `spec`): its own and those its extensions add."""
        return spec["seeds"] + sum(e["seeds"] for e in self.extensions.get(run_id, []))

    # What each job of a figure reads of it. The rules pass a digest of it as a param, so that
    # Snakemake's params trigger reruns exactly the jobs whose part of the configuration changed
    # (a Figure itself is no param Snakemake records).
    def table_settings(self) -> dict[str, Any]:
        """What rule aggregate reads (results/tables.py): the curves with their labels, the settings
        shown, the kind (which rows a run contributes)."""
        return {"name": self.name, "kind": self.plot.get("kind"), "setting_keys": self.setting_keys,
                "curves": [dataclasses.asdict(c) for c in self.curves]} | self._extensions_setting()

    def drawing_settings(self) -> dict[str, Any]:
        """What rules plot and table read: all of the figure, title and caption included (the report
        shows the caption with the file they write)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "extensions"} | self._extensions_setting()

    def _extensions_setting(self) -> dict[str, Any]:
        """The extensions as a setting only where there are some: without a seed plan the digests are as they were."""
        return {"extensions": self.extensions} if self.extensions else {}

    def claims_settings(self) -> dict[str, Any]:
        """What rule claims reads: the label columns of the table (its paper columns among them: claims are read
        in the paper's terms)."""
        return {"labels": self.label_columns}

    @property
    def run_ids(self) -> list[str]:
        """Every run its table reads: its curves' and those that add seeds to them."""
        return sorted({rid for c in self.curves for rid in self.curve_runs(c.run_id)})

    @property
    def label_columns(self) -> list[str]:
        """The columns of this figure's table that identify a curve (not measured): declared here, so
        that plots and claims never guess them from the column order."""
        return (LABEL_COLUMNS + self.setting_keys + [paper_column(k) for k in self.paper_keys]
                + ([FIRST_LOOK_SEEDS] if self.extensions else []))

    @property
    def formats(self) -> tuple[str, ...]:
        """File extensions of figures/<paper>/<name>.*"""
        return self.kind.formats

    @property
    def kind(self) -> FigureKind:
        return FIGURE_KINDS[self.plot["kind"]]

    def __str__(self) -> str:
        """Its settings as one line of text: the HTML report shows a rule's parameters this way (the
        dataclass repr, which Snakemake compares to see a parameter change, stays as it is)."""
        options = ", ".join(f"{k} = {_text(v)}" for k, v in self.plot.items())
        curves = "; ".join(f"{c.panel}: {c.label}" + "".join(f", {k} = {_text(v)}" for k, v in c.grid.items())
                           + f" (run {c.run_id})" for c in self.curves)
        deviations = f" Deviations: {'; '.join(self.deviations)}." if self.deviations else ""
        return (f"{self.paper} {self.name} at scale {self.scale}: {self.title}. Plot: {options}.{deviations} "
                f"Curves: {curves}.")


def _text(value: Any) -> str:
    """A setting as plain text: lists without the quotes of their strings."""
    return f"[{', '.join(map(_text, value))}]" if isinstance(value, (list, tuple)) else str(value)


class FigureList(list):
    """Figures (or Alternatives) as one parameter of a rule: the report shows each one's text (their __str__),
    not the list's repr of dataclasses; the repr, which Snakemake compares, stays a list's."""

    def __str__(self) -> str:
        return " | ".join(map(str, self))


def setting_keys(specs: list[dict[str, Any]]) -> list[str]:
    """Every scalar setting of the runs, so that a figure table alone tells how each curve was made."""
    keys = {k for s in specs for k, v in s.items() if isinstance(v, (int, float, str))}
    return sorted(keys - set(LABEL_COLUMNS) - {"paper", "engine"})


PRIMARY = "primary"  # the primary reading, as config `readings: primary` names it


@dataclass
class Alternative:
    """An alternative reading as run (config `readings: all`): the figures that the claims resting on its reading
    read and whose runs it changes (none: the patch changes no run of those figures at this scale)."""
    reading: str
    name: str
    figures: dict[str, Figure]

    def __str__(self) -> str:
        """As the HTML report shows a rule's parameter (the dataclass repr stays what Snakemake compares)."""
        return f"{self.reading}={self.name}: " + (", ".join(self.figures) or "changes no run")


@dataclass
class RunTable:
    scale: str
    runs: dict[str, dict[str, Any]]
    figures: dict[tuple[str, str], Figure]
    readings: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # paper -> its `readings`
    # paper -> its alternative readings as run; a paper is absent when they are not evaluated (readings: primary)
    alternatives: dict[str, list[Alternative]] = field(default_factory=dict)
    # paper -> the tunings whose choices its runs take at this scale (tunings_of): name -> settings and seeds
    tunings: dict[str, dict[str, dict[str, list]]] = field(default_factory=dict)

    def figure(self, paper: str, name: str) -> Figure:
        try:
            return self.figures[(paper, name)]
        except KeyError:
            known = sorted(f for p, f in self.figures if p == paper)
            raise ConfigError(
                f"unknown figure {name!r} for paper {paper!r} at scale {self.scale!r}; "
                f"allowed: {', '.join(known) or '(none: unknown paper)'}"
            ) from None

    def paper_figures(self, paper: str) -> list[Figure]:
        return [f for (p, _), f in sorted(self.figures.items()) if p == paper]

    def alternative(self, paper: str, reading: str, name: str) -> Alternative:
        for alternative in self.alternatives.get(paper, []):
            if (alternative.reading, alternative.name) == (reading, name):
                return alternative
        raise ConfigError(f"{paper}: no alternative {name!r} of reading {reading!r} is run at scale {self.scale!r} "
                          f"(config readings: all runs those that declare `set`)")

    @property
    def layout(self) -> Layout:
        return Layout(self.scale)

    def alternative_table(self, paper: str, alternative: Alternative, figure: str) -> str:
        return str(self.layout.reading_table(paper, alternative.reading, alternative.name, figure))

    def alternative_tables(self, paper: str) -> list[str]:
        """The figure tables of a paper's alternative readings."""
        return [self.alternative_table(paper, a, f) for a in self.alternatives.get(paper, []) for f in a.figures]

    def run_origins(self) -> dict[str, str]:
        """Run id -> the reading that adds it: PRIMARY when a paper's own figures have it, else the first
        alternative (reading=name) whose figures do."""
        origins = {rid: PRIMARY for figure in self.figures.values() for rid in figure.run_ids}
        for paper_alternatives in self.alternatives.values():
            for a in paper_alternatives:
                for figure in a.figures.values():
                    for rid in figure.run_ids:
                        origins.setdefault(rid, f"{a.reading}={a.name}")
        return origins

    def alternatives_settings(self, paper: str) -> dict[str, dict[str, dict[str, Any]]] | None:
        """What rule claims reads of the alternatives: reading -> alternative -> figure -> its table's path and
        Figure.claims_settings (an alternative that changes no run: no figures); None when not evaluated."""
        if paper not in self.alternatives:
            return None
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for a in self.alternatives[paper]:
            out.setdefault(a.reading, {})[a.name] = {
                name: {"table": self.alternative_table(paper, a, name), **fig.claims_settings()} for name, fig in a.figures.items()}
        return out

    def ledger_settings(self, paper: str) -> dict[str, Any]:
        """Everything rule claims gives the ledger's builder besides the files (claims/ledger.py write_ledger): what
        it reads of the paper's figures, the scale's note, the readings and the alternatives as run; the audit
        rebuilds the ledger with them."""
        return {"figures": {f.name: f.claims_settings() for f in self.paper_figures(paper)},
                "scale_note": self.scale_note(paper), "readings": self.readings[paper],
                "alternatives": self.alternatives_settings(paper), "seeds": self.seeds_record(paper)}

    def seeds_record(self, paper: str) -> dict[str, Any]:
        """What the ledger's record says of seeds: `judged`, every seed of the runs of the paper's figures, and per
        tuning whose choices those runs take, the settings it tuned, the `seeds` it chose them on and those of them
        that are also `judged` here (none, for a tuning run on seeds of its own: variants/tune.py)."""
        judged = sorted({s for f in self.paper_figures(paper) for rid in f.run_ids for s in seeds_of(self.runs[rid])})
        return {"judged": judged,
                "tunings": {name: {**tuning, "judged": sorted(set(tuning["seeds"]) & set(judged))}
                            for name, tuning in self.tunings.get(paper, {}).items()}}

    def method_names(self, paper: str) -> dict[str, str]:
        """Each method's curve label, where it has one label across the paper's figures: the names the ledger's
        table gives the method keys its checks measure with."""
        labels: dict[str, set[str]] = {}
        for figure in self.paper_figures(paper):
            for curve in figure.curves:
                labels.setdefault(curve.method, set()).add(curve.label)
        return {m: next(iter(ls)) for m, ls in sorted(labels.items()) if len(ls) == 1 and ls != {m}}

    def scale_note(self, paper: str) -> str:
        """How this scale departs from the paper's in every figure of `paper` (the deviations its figures
        share: the scale's settings and its note), for the claims ledger; "" at the paper scale."""
        figures = self.paper_figures(paper)
        shared = [d for d in (figures[0].deviations if figures else []) if all(d in f.deviations for f in figures[1:])]
        return f"Deviations from the paper at the {self.scale} scale: " + "; ".join(shared) + "." if shared else ""

    def datasets(self, run_id: str) -> list[str]:
        return [self.runs[run_id]["dataset"]]

    def input_files(self, run_id: str) -> dict[str, str | list[str]]:
        """The files rule `train` reads: the run's one prepared input (data/inputs.py: its dataset's .npz, the
        model-input view of it when the spec names one, or a multi-view dataset's folder), which the engine
        gets as its arrays, and the datasets' provenance records."""
        return {
            "prepared": prepared_path(self.runs[run_id]),
            "provenance": [provenance_path(d) for d in self.datasets(run_id)],
        }


def run_id_of(spec: dict[str, Any], numerics: int | None = None) -> str:
    """The digest of what determines a run's results: its spec but the operational keys and the ID_DEFAULTS at
    their default, and the numerics version of its engine when non-zero: `numerics`, the version that made the
    run (run.json's), or by default the engine's current one."""
    body = {k: v for k, v in spec.items()
            if k not in OPERATIONAL_KEYS and (k not in ID_DEFAULTS or v != ID_DEFAULTS[k])}
    version = numerics_version(spec.get("engine", "")) if numerics is None else numerics
    if version:
        body["numerics"] = version
    return config_digest(body)


def load_paper_config(path: Path) -> dict[str, Any]:
    return read_yaml(path)


def _merge(*layers: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for layer in layers:
        out.update(copy.deepcopy(layer or {}))
    return out


def _pick(mapping: dict[str, Any], key: str, what: str, where: str) -> Any:
    if key not in mapping:
        raise ConfigError(f"{where}: unknown {what} {key!r}; allowed: {', '.join(sorted(mapping))}")
    return mapping[key]


def _grid_points(grid: dict[str, list[Any]] | None) -> list[dict[str, Any]]:
    if not grid:
        return [{}]
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def figure_panels(fig: dict[str, Any], figures: dict[str, Any], panels: dict[str, Any], where: str) -> list[dict]:
    """A figure's panels: its own list, or `{from: [figures], order: [settings]}`, the panels of those figures
    (each with its figure's curves and grid where it has none of its own: the same runs) ordered by the values
    of the `order` settings (of the panel's `use` and `set`), each value ranked where it first appears. Table I
    reuses Figs 2-5 so: ordered by data, partition and n."""
    if isinstance(fig["panels"], list):
        return fig["panels"]
    reused = []
    for source in fig["panels"]["from"]:
        src = _pick(figures, source, "figure", f"{where}.panels.from")
        if not isinstance(src["panels"], list):
            raise ConfigError(f"{where}.panels.from: figure {source} reuses panels itself; name the figures "
                              f"that list them")
        for panel in src["panels"]:
            reused.append({**{k: src[k] for k in ("curves", "grid") if k in src}, **copy.deepcopy(panel)})

    def value(panel: dict[str, Any], key: str) -> str:
        settings = {**_pick(panels, panel["use"], "panel", where), **panel.get("set", {})}
        if key not in settings:
            raise ConfigError(f"{where}.panels.order: panel {panel['name']!r} sets no {key}")
        return repr(settings[key])

    order = fig["panels"].get("order", [])
    ranks = {key: list(dict.fromkeys(value(p, key) for p in reused)) for key in order}
    return sorted(reused, key=lambda p: tuple(ranks[k].index(value(p, k)) for k in order))


def _scaled_figure(name: str, fig: dict[str, Any], override: dict[str, Any], where: str) -> dict[str, Any]:
    """Apply one scale's figure override (keep panels / methods, replace the grid)."""
    fig = copy.deepcopy(fig)
    if "panels" in override:
        by_name = {p["name"]: p for p in fig["panels"]}
        fig["panels"] = [_pick(by_name, n, "panel", f"{where}.{name}.panels") for n in override["panels"]]
    if "grid" in override:
        fig["grid"] = override["grid"]
        for panel in fig["panels"]:
            panel.pop("grid", None)
    if "methods" in override:
        keep = set(override["methods"])
        fig["curves"] = [c for c in fig.get("curves", []) if c["method"] in keep]
        for panel in fig["panels"]:
            if "curves" in panel:
                panel["curves"] = [c for c in panel["curves"] if c["method"] in keep]
    return fig


def _plot_options(paper_plot: dict[str, Any], figure_plot: dict[str, Any]) -> dict[str, Any]:
    """The figure's plot options over the paper's, when both are of one kind; a figure of another kind
    (e.g. a table among line plots) has only its own."""
    same_kind = figure_plot.get("kind", paper_plot.get("kind")) == paper_plot.get("kind")
    return _merge(paper_plot if same_kind else {}, figure_plot)


def _title(template: str, specs: list[tuple[dict[str, Any], dict[str, Any]]], where: str) -> str:
    """A figure's title, which may name the values a setting takes in its runs, e.g. "N = {n_clients}
    clients": every value of n_clients among the runs drawn, in the order drawn, so that the title of a
    scale that drops a panel never names it. `specs` pairs each run's spec with the spec the paper's settings
    give the same curve: where a scale changed the value, the title gives both, "N = 20 (paper 100)"."""
    try:
        keys = [key for _, key, _, _ in string.Formatter().parse(template) if key is not None]
    except ValueError as error:
        raise ConfigError(f"{where}: title {template!r}: {error}") from None
    values = {}
    for key in keys:
        seen = [(spec[key], paper.get(key)) for spec, paper in specs if key in spec]
        if not key.isidentifier() or not seen:
            raise ConfigError(f"{where}: title names {{{key}}}, which is not a setting of its runs")
        ours, papers = list(dict.fromkeys(v for v, _ in seen)), list(dict.fromkeys(p for _, p in seen))
        values[key] = _values_text(ours)
        if None not in papers and papers != ours:
            values[key] += f" (paper {_values_text(papers)})"
    return template.format_map(values)


def _values_text(values: list[Any]) -> str:
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values)


def _as_run(keys: list[str], curves: list[Curve], runs: dict[str, dict]) -> str:
    """What the figure's curves ran with for the settings `keys` (a figure's `caption_settings`), read from
    the resolved runs, so that a caption never states a value another scale, a per_run entry or the data
    read replaced: "lr as run: Q = 1 0.5; Q = 10 0.05, 0.01." (a label's values over its panels, in order).
    A curve whose run has no such setting (a method it does not apply to) is left out."""
    parts = []
    for key in keys:
        by_label: dict[str, dict[Any, None]] = {}
        for curve in curves:
            if key in runs[curve.run_id]:
                by_label.setdefault(curve.label, {})[runs[curve.run_id][key]] = None
        shown = "; ".join(f"{label} " + ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values)
                          for label, values in by_label.items())
        parts.append(f"{key} as run: {shown}.")
    return " ".join(parts)


def _deviations(paper_cfg: dict[str, Any], scale: str) -> list[str]:
    """Plain-text list of how this scale departs from the paper scale (for captions)."""
    if scale == "paper":
        return []
    scale_cfg = paper_cfg.get("scales", {}).get(scale) or {}
    notes = [
        f"{k} = " + ", ".join(f"{new} where the paper has {old}" for old, new in mapping.items())
        for k, mapping in sorted(scale_cfg.get("values", {}).items())
    ]
    notes += [
        f"{k} = {v} (paper scale: {paper_cfg['defaults'].get(k)})"
        for k, v in sorted(scale_cfg.get("defaults", {}).items())
    ]
    notes += [
        f"{panel}: {k} = {v} (paper scale: {paper_cfg['panels'][panel].get(k, paper_cfg['defaults'].get(k))})"
        for panel, settings in sorted(scale_cfg.get("panels", {}).items())
        for k, v in sorted(settings.items())
    ]
    per_run = sorted({k for entry in scale_cfg.get("per_run", []) for k in entry["set"]})
    notes += [f"{k} set per run (scales.{scale}.per_run)" for k in per_run]
    return notes


def resolve_data_source(spec: dict[str, Any], raw_root: Path) -> DataSource | None:
    """A dataset the user provides (data/sources.py) becomes what is there: the user's data or its stand-in,
    so the run_id and run.json name the data actually read; `data_source` records its label. A stand-in
    named by the configuration (split-pair CIFAR) gets its label too. None for other datasets."""
    dataset = spec.get("dataset")
    if dataset in USER_DATASETS:
        source = resolve_source(dataset, raw_root)
        spec["dataset"] = source.key
        if not source.real and source.key in MULTIVIEW_DATASETS:
            spec["image_channels"] = 1  # the synthetic 12-view renders are grey (data/synthetic.py)
    elif dataset in STAND_INS:
        source = DataSource(dataset, dataset, False, STAND_INS[dataset].label, "")
    else:
        return None
    spec["data_source"] = source.label
    return source


def per_run_settings(per_run: list[dict[str, Any]], spec: dict[str, Any]) -> dict[str, Any]:
    """The settings a scale's `per_run` entries give a run: each entry whose `where` the run's settings
    match (after the scale's `values`, with `dataset` the data actually read: the user's or its stand-in)
    lays its `set` over the run, later entries over earlier ones (e.g. the step size a tuning (`fedrepro variants`) chose
    for each (dataset, K, Q))."""
    chosen: dict[str, Any] = {}
    for entry in per_run:
        if all(key in spec and spec[key] == value for key, value in entry["where"].items()):
            chosen.update(entry["set"])
    return chosen


Resolved = tuple[dict[str, dict], dict[tuple[str, str], Figure]]  # a paper's runs and figures at one scale


def raw_data_root(config_dir: Path) -> Path:
    """Where user-provided data would be, beside the configuration (data/sources.py)."""
    return config_dir.parent / "data" / "raw"


def resolve_paper(paper_cfg: dict[str, Any], scale: str, raw_root: Path = Path(RAW_DIR)) -> Resolved:
    """The runs and figures of a paper at a scale; `raw_root` is where user-provided data would be
    (data/sources.py: without it, the runs read its stand-in, and each caption says so)."""
    paper = paper_cfg["key"]
    where = f"config/papers/{paper}.yaml"
    scales = paper_cfg.get("scales", {})
    scale_cfg = _pick(scales, scale, "scale", f"{where}: scales") or {}
    defaults = _merge(paper_cfg.get("defaults", {}), scale_cfg.get("defaults", {}))
    deviations = _deviations(paper_cfg, scale)
    fig_overrides = scale_cfg.get("figures", {})
    values = scale_cfg.get("values", {})
    per_run = scale_cfg.get("per_run", [])
    for name in fig_overrides:
        _pick(paper_cfg["figures"], name, "figure", f"{where}: scales.{scale}.figures")
    # a scale may also override settings of named panels (e.g. per-dataset step sizes)
    panels = dict(paper_cfg["panels"])
    for name, settings in scale_cfg.get("panels", {}).items():
        panels[name] = _merge(_pick(panels, name, "panel", f"{where}: scales.{scale}.panels"), settings)

    runs: dict[str, dict] = {}
    paper_specs: dict[str, dict] = {}  # run id -> the spec of its curve under the paper's own settings (titles)
    figures: dict[tuple[str, str], Figure] = {}
    for name, fig in paper_cfg["figures"].items():
        override = fig_overrides.get(name, {})
        fig = {**fig, "panels": figure_panels(fig, paper_cfg["figures"], panels, f"{where}: figures.{name}")}
        fig = _scaled_figure(name, fig, override, f"{where}: scales.{scale}.figures")
        extra = [f"{name} at this scale keeps {k} = {override[k]}" for k in ("panels", "grid", "methods") if k in override]
        extra += [note.strip() for note in (scale_cfg.get("note"), override.get("note")) if note]
        plot = _plot_options(paper_cfg.get("plot", {}), fig.get("plot", {}))
        figure = Figure(paper, name, fig["title"], fig.get("caption", ""), scale, deviations + extra, plot,
                        values=values)
        stand_ins: dict[str, None] = {}  # labels of the stand-ins the figure's runs read, in order
        for panel in fig["panels"]:
            base = _pick(panels, panel["use"], "panel", f"{where}: figures.{name}")
            curves = panel.get("curves", fig.get("curves", []))
            grid = panel.get("grid", fig.get("grid"))
            for curve in curves:
                method = _pick(paper_cfg["methods"], curve["method"], "method", f"{where}: figures.{name}")
                # `fixed`: settings the grid does not vary for this curve (one run, e.g. a reference that
                # does not depend on the grid's setting)
                fixed = curve.get("fixed", {})
                for point in _grid_points(grid):
                    spec = _merge(defaults, base, method, panel.get("set", {}), curve, point, fixed)
                    as_paper = _merge(paper_cfg.get("defaults", {}), paper_cfg["panels"][panel["use"]], method,
                                      panel.get("set", {}), curve, point, fixed)
                    spec.pop("fixed", None)
                    mapped_from = {key: spec[key] for key in values if key in spec}
                    for key, mapping in values.items():  # e.g. n = 10 of 100 clients -> 2 of 20
                        if key in spec and spec[key] in mapping:
                            spec[key] = mapping[spec[key]]
                    source = resolve_data_source(spec, raw_root)
                    tuned = per_run_settings(per_run, spec)  # on the data read: a stand-in is tuned apart
                    spec.update(tuned)
                    # a setting a per_run entry chose stands for no value of the paper's: its own
                    mapped_from.update({key: spec[key] for key in mapped_from if key in tuned})
                    if source is not None and not source.real:
                        stand_ins[source.label] = None
                    label = spec.get("label", curve["method"])
                    for key in PRESENTATION_KEYS:
                        spec.pop(key, None)
                    analysis = {key: spec.pop(key) for key in ANALYSIS_KEYS if key in spec}
                    spec["paper"] = paper
                    spec["engine"] = paper_cfg["engine"]
                    spec["method"] = curve["method"]
                    rid = run_id_of(spec)
                    runs[rid] = spec
                    paper_specs.setdefault(rid, as_paper)
                    if any(c.panel == panel["name"] and c.run_id == rid for c in figure.curves):
                        continue  # a curve with `fixed` settings: one run, drawn once in its panel
                    point = {k: fixed.get(k, v) for k, v in point.items()}
                    figure.curves.append(Curve(panel["name"], label, curve["method"], rid, point, analysis,
                                               mapped_from))
        if stand_ins:
            figure.caption = (figure.caption.rstrip() + " Data: " + "; ".join(stand_ins) + ".").strip()
            figure.stand_ins = list(stand_ins)
        if fig.get("caption_settings"):
            as_run = _as_run(fig["caption_settings"], figure.curves, runs)
            figure.caption = (figure.caption.rstrip() + " " + as_run).strip()
        figure.title = _title(fig["title"], [(runs[c.run_id], paper_specs[c.run_id]) for c in figure.curves],
                              f"{where}: figures.{name}")
        figure.setting_keys = setting_keys([runs[rid] for rid in figure.run_ids]) + sorted(
            {k for c in figure.curves for k in c.analysis})
        figure.paper_keys = sorted({k for c in figure.curves for k in c.paper} & set(figure.setting_keys))
        figures[(paper, name)] = figure
    known = {key for spec in runs.values() for key in spec}
    for i, entry in enumerate(per_run):
        unknown = sorted(set(entry["where"]) - known)
        if unknown:
            raise ConfigError(f"{where}: scales.{scale}.per_run[{i}] matches on {', '.join(unknown)}, "
                              f"which no run of this scale has")
    return runs, figures


def label_values(runs: dict[str, dict], figures: dict[tuple[str, str], Figure]) -> dict[str, dict[str, set[Any]]]:
    """Per figure of a resolved paper (resolve_paper), each label column of its table and the values it takes, in
    the paper's terms (a mapped setting at its paper column's value, as the claims read them). Of the paper
    scale's figures, what a claim may name: a claim is the paper's, in the paper's terms, while a reduced scale
    may drop panels (its claim is then undecided there) but never names a value of the paper's otherwise."""
    out: dict[str, dict[str, set[Any]]] = {}
    for (_, name), figure in figures.items():
        columns = out.setdefault(name, {})
        for curve in figure.curves:
            labels = figure.curve_labels(curve, runs[curve.run_id])
            for column in LABEL_COLUMNS + figure.setting_keys:
                columns.setdefault(column, set()).add(labels.get(paper_column(column), labels[column]))
    return out


def resolve_alternatives(paper_cfg: dict[str, Any], claims: list[dict[str, Any]], scale: str, raw_root: Path,
                         figures: dict[tuple[str, str], Figure]) -> tuple[dict[str, dict], list[Alternative]]:
    """The runs and figures of every alternative reading that declares a `set` (utils/patch.py): of the
    figures the claims resting on its reading read, those whose runs it changes. `figures`: the paper's own."""
    paper = paper_cfg["key"]
    runs: dict[str, dict] = {}
    alternatives = []
    for reading, declared in paper_cfg.get("readings", {}).items():
        read = {f for claim in claims if reading in claim.get("rests_on", []) for f in claim.get("figures", [])}
        for name, alternative in (declared.get("alternatives") or {}).items():
            if "set" not in alternative:
                continue
            alt_runs, alt_figures = resolve_paper(patched(paper_cfg, alternative["set"]), scale, raw_root)
            changed = {f: alt_figures[(paper, f)] for f in sorted(read) if (paper, f) in alt_figures
                       and alt_figures[(paper, f)].run_ids != figures[(paper, f)].run_ids}
            runs.update({rid: alt_runs[rid] for fig in changed.values() for rid in fig.run_ids})
            alternatives.append(Alternative(reading, name, changed))
    return runs, alternatives


def judged_seeds(paper_cfg: dict[str, Any], raw_root: Path) -> set[int]:
    """Every seed that a run of the paper is judged on: at every scale, under its primary readings and under each
    alternative that declares runs. A tuning trains none of them (variants/tune.py)."""
    configs = [paper_cfg] + [patched(paper_cfg, alternative["set"]) for reading in paper_cfg.get("readings", {}).values()
                             for alternative in (reading.get("alternatives") or {}).values() if "set" in alternative]
    return {seed for cfg in configs for scale in cfg.get("scales", {})
            for spec in resolve_paper(cfg, scale, raw_root)[0].values() for seed in seeds_of(spec)}


def tunings_of(paper_cfg: dict[str, Any], scale: str, config_dir: Path) -> dict[str, dict[str, list]]:
    """The tunings whose choices the scale's `per_run` freezes (its `tunings`): name -> the settings it tunes and the
    seeds its frozen result trained on. Each must be a tuning of this paper at this scale (config/variants)."""
    out = {}
    for name, seeds in ((paper_cfg.get("scales", {}).get(scale) or {}).get("tunings") or {}).items():
        tuning = load_variants(name, config_dir)
        if tuning["kind"] != TUNING or (tuning["paper"], tuning["scale"]) != (paper_cfg["key"], scale):
            raise ConfigError(f"config/papers/{paper_cfg['key']}.yaml: scales.{scale}.tunings names {name}, which is "
                              f"not a tuning of {paper_cfg['key']} at the {scale} scale")
        out[name] = {"settings": tuned_settings(tuning), "seeds": seed_range(seeds)}
    return out


def build_run_table(config: dict[str, Any], config_dir: Path,
                    loaded: dict[str, tuple[dict[str, Any], Resolved | None]] | None = None) -> RunTable:
    """The runs and figures of config `papers` at config `scale`; with `readings: all`, also the runs and
    figures of their alternative readings (resolve_alternatives). `loaded`: papers already read, each as (its
    configuration, resolve_paper of it at config `scale` or None), which are not read (or resolved) again."""
    runs: dict[str, dict] = {}
    figures: dict[tuple[str, str], Figure] = {}
    readings: dict[str, dict[str, dict[str, Any]]] = {}
    alternatives: dict[str, list[Alternative]] = {}
    tunings: dict[str, dict[str, dict[str, list]]] = {}
    raw_root = raw_data_root(config_dir)
    for paper in config["papers"]:
        paper_cfg, resolution = (loaded or {}).get(paper, (None, None))
        if paper_cfg is None:
            path = config_dir / "papers" / f"{paper}.yaml"
            if not path.exists():
                raise ConfigError(f"papers: no configuration {path} for paper {paper!r}")
            paper_cfg = load_paper_config(path)
        paper_runs, paper_figures = resolution or resolve_paper(paper_cfg, config["scale"], raw_root)
        runs.update(paper_runs)
        figures.update(paper_figures)
        readings[paper] = paper_cfg.get("readings", {})
        tunings[paper] = tunings_of(paper_cfg, config["scale"], config_dir)
        if config.get("readings") == "all":
            claims = read_yaml(config_dir / "claims" / f"{paper}.yaml").get("claims", [])
            alt_runs, alternatives[paper] = resolve_alternatives(paper_cfg, claims, config["scale"], raw_root,
                                                                 paper_figures)
            runs.update({rid: spec for rid, spec in alt_runs.items() if rid not in runs})
    return RunTable(config["scale"], runs, figures, readings, alternatives, tunings)
