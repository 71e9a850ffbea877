"""Configuration checks at start-up: a bad key, type or name stops the run with a message
that says where it is and what is allowed, before any job starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from fedrepro.claims.ledger import load_claims
from fedrepro.engines import ENGINES
from fedrepro.engines.context import resolve_device
from fedrepro.errors import ConfigError
from fedrepro.layout import CLAIMS_FIGURE
from fedrepro.experiments.runtable import (Figure, RunTable, build_run_table, label_values, load_paper_config,
                                           raw_data_root, resolve_paper)
from fedrepro.schemas import SCALES, SCHEMA_DIR, check, check_against, known_papers, schema

# plot options whose values are method names of the paper
METHOD_OPTIONS = ("dashed", "style_independent")


def check_plot_options(figure: Figure, schema_dir: Path = SCHEMA_DIR) -> None:
    """A figure's plot options (the paper's `plot` merged with its own, when of one kind) against those
    of its kind in the paper schema (`$defs.<kind>_plot`): a misspelt option stops the run here, not
    when the figure is drawn."""
    kind = figure.plot.get("kind")
    defs = schema("paper.schema.yaml", schema_dir)["$defs"]
    check_against(figure.plot, {"$ref": f"#/$defs/{kind}_plot", "$defs": defs}, f"config/papers/{figure.paper}.yaml",
           at=f"figures.{figure.name}.plot (kind {kind})")


def typed(value: Any) -> Any:
    """A config value with the strings inside a mapping or list read as YAML scalars: Snakemake's --config reads a
    nested value with YAML's BaseLoader, every leaf a string (`max_seeds={quick: 12}` gives {'quick': '12'}), where
    config.yaml gives 12. A top-level scalar is Snakemake's to type (int, float, bool, else a string), and a string
    that YAML reads as a mapping or list stays a string."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    if isinstance(value, str):
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
        return parsed if parsed is None or isinstance(parsed, (bool, int, float, str)) else value
    return value


def with_defaults(config: dict[str, Any], schema_dir: Path = SCHEMA_DIR) -> dict[str, Any]:
    """The top-level config with the schema's defaults filled in (after checking it); a per-scale mapping given in
    part (`--config "max_seeds={quick: 12}"`, or flat: `max_seeds_quick=12`, which needs no quotes in a shell or a
    Makefile) keeps the defaults of the scales it leaves out, its values typed as config.yaml's are (typed)."""
    properties = schema("config.schema.yaml", schema_dir)["properties"]
    per_scale = [k for k, v in properties.items() if isinstance(v.get("default"), dict) and set(v["default"]) <= set(SCALES)]
    flat = {f"{k}_{scale}": (k, scale) for k in per_scale for scale in SCALES}
    folded = {k: v for k, v in config.items() if k not in flat}
    for k, v in config.items():
        if k in flat:  # max_seeds_quick=12: the flat form of max_seeds={quick: 12}, over it where both are given
            key, scale = flat[k]
            folded[key] = {**(folded.get(key) or {}), scale: v}
    config = {k: typed(v) if isinstance(v, (dict, list)) else v for k, v in folded.items()}
    check(config, "config.schema.yaml", "config/config.yaml (or --config)", schema_dir)
    full = {k: v.get("default") for k, v in properties.items()}
    full.update({k: {**full[k], **v} if isinstance(full.get(k), dict) else v for k, v in config.items()})
    return full


def load_and_validate(
    config: dict[str, Any], config_dir: Path, schema_dir: Path = SCHEMA_DIR
) -> tuple[dict[str, Any], RunTable]:
    """Validate the top-level config, every paper file, its claims file and every resolved run.

    The run table covers every known paper, so that each paper's target works whatever
    `papers` (the papers `all` builds) says.
    """
    config = with_defaults(config, schema_dir)
    papers = known_papers(schema_dir)
    engines, methods = {}, {}
    loaded = {}  # each paper read once, and resolved at the paper scale for its claims, reused at scale paper
    raw_root = raw_data_root(config_dir)
    for paper in papers:
        path = config_dir / "papers" / f"{paper}.yaml"
        if not path.exists():
            raise ConfigError(f"no configuration {path} for paper {paper!r}")
        paper_cfg = load_paper_config(path)
        check(paper_cfg, "paper.schema.yaml", str(path), schema_dir)
        if paper_cfg["key"] != paper:
            raise ConfigError(f"{path}: key is {paper_cfg['key']!r}, expected {paper!r}")
        if paper_cfg["engine"] not in ENGINES:
            raise ConfigError(f"{path}: engine: {paper_cfg['engine']!r} is not allowed; allowed values: "
                              f"{', '.join(ENGINES)}")
        engines[paper] = paper_cfg["engine"]
        methods[paper] = sorted(paper_cfg["methods"])
        if CLAIMS_FIGURE in paper_cfg["figures"]:  # figures/<scale>/<paper>/claims.* is the claims figure
            raise ConfigError(f"{path}: a figure may not be named {CLAIMS_FIGURE!r}; that name is the claims figure's")
        claims_path = config_dir / "claims" / f"{paper}.yaml"
        if not claims_path.exists():
            raise ConfigError(f"no claims file {claims_path} for paper {paper!r}")
        at_paper_scale = resolve_paper(paper_cfg, "paper", raw_root)
        check_reading_methods(paper_cfg, at_paper_scale[0], str(path), schema_dir)
        claims = load_claims(claims_path, label_values(*at_paper_scale), paper_cfg.get("readings", {}))
        for claim in claims["claims"]:
            _check_columns(claim, paper_cfg["engine"], f"{claims_path}: claim {claim['id']}")
        loaded[paper] = (paper_cfg, at_paper_scale if config["scale"] == "paper" else None)
    table = build_run_table({**config, "papers": papers}, config_dir, loaded)
    alternatives = [(f"readings.{a.reading}.alternatives.{a.name}: ", f) for paper, alts in table.alternatives.items()
                    for a in alts for f in a.figures.values()]
    curves = {c.run_id: f"{where}figures.{f.name}, panel {c.panel!r}, curve {c.label!r}"  # each run's first curve
              for where, f in reversed([("", f) for f in table.figures.values()] + alternatives)
              for c in reversed(f.curves)}
    for run_id, spec in table.runs.items():
        engine = ENGINES[engines[spec["paper"]]]
        where = f"config/papers/{spec['paper']}.yaml: {curves[run_id]} (run {run_id}, scale {config['scale']})"
        check(spec, engine.schema, where, schema_dir)  # named as the user wrote it: figure, panel, curve
        engine.check_limits(spec, where)
    for (paper, name), figure in table.figures.items():
        for options in (figure.plot, figure.plot.get("value", {})):
            _check_columns(options, engines[paper], f"config/papers/{paper}.yaml: figures.{name}.plot")
        _check_methods(figure.plot, methods[paper], f"config/papers/{paper}.yaml: figures.{name}.plot")
        check_plot_options(figure, schema_dir)
        check_timelines(figure, table.runs, engines[paper])
    return config, table


def check_reading_methods(paper_cfg: dict[str, Any], runs: dict[str, dict[str, Any]], where: str,
                          schema_dir: Path = SCHEMA_DIR) -> None:
    """An alternative reading that sets methods' settings (`set: {methods: ...}`) names every method of the paper
    whose runs take one of those settings (the run schema and the engine accept it there): a method added to the
    paper later, of an algorithm that reads the setting, would otherwise keep the primary reading under
    `readings: all`, silently. A method the reading leaves as it is is named with `{}`. `runs`: the paper's, each
    method judged on one of its runs (a method with none has nothing the reading could change)."""
    methods = paper_cfg["methods"]
    engine = ENGINES[paper_cfg["engine"]]
    run_of = {}
    for spec in runs.values():
        run_of.setdefault(spec["method"], spec)
    for reading, declared in paper_cfg.get("readings", {}).items():
        for name, alternative in (declared.get("alternatives") or {}).items():
            patch = alternative.get("set", {}).get("methods")
            if not patch:
                continue
            at = f"{where}: readings.{reading}.alternatives.{name}.set.methods"
            unknown = sorted(set(patch) - set(methods))
            if unknown:
                raise ConfigError(f"{at}: {', '.join(unknown)} is not a method of the paper; allowed values: "
                                  f"{', '.join(methods)}")
            given = {key: value for settings in patch.values() for key, value in settings.items()}
            for method_name, spec in sorted(run_of.items()):
                if method_name in patch:
                    continue
                taken = [key for key, value in given.items() if _takes(engine, {**spec, key: value}, schema_dir)]
                if taken:
                    setters = [m for m, settings in patch.items() if set(settings) & set(taken)]
                    raise ConfigError(
                        f"{at} sets {', '.join(taken)} on {', '.join(setters)} but does not name method "
                        f"{method_name!r}, whose runs take it too: add it there ({method_name}: {{}} if the reading "
                        f"leaves it as it is)")


def _takes(engine: Any, spec: dict[str, Any], schema_dir: Path) -> bool:
    """Whether a run with these settings passes the start-up checks of its engine."""
    try:
        check(spec, engine.schema, "", schema_dir)
        engine.check_limits(spec, "")
    except ConfigError:
        return False
    return True


def check_device(device: str) -> None:
    """Jobs that run on this machine with `device: cuda` need a GPU here: checked before the first job
    (workflow/rules/common.smk onstart), not when every train job fails after the data was fetched."""
    try:
        resolve_device(device)
    except (RuntimeError, ConfigError):  # the run's own check, raised here before any job
        raise ConfigError(f"config/config.yaml (or --config): device: {device!r}, but torch finds no CUDA device "
                          f"on this machine; allowed here: auto, cpu") from None


def check_timelines(figure: Figure, runs: dict[str, dict[str, Any]], engine: str) -> None:
    """A `gantt` or `clients` figure reads its runs' timing traces, and a `gantt` figure their timelines:
    each run must record them (else rule aggregate would fail only after the runs were trained)."""
    kind = figure.plot.get("kind")
    if figure.kind.rows != "metrics" and engine != "async":  # rows from a timing trace, which only async writes
        raise ConfigError(f"config/papers/{figure.paper}.yaml: figures.{figure.name} is a {kind} figure, which "
                          f"reads the timing trace of engine async; this paper's engine is {engine}")
    if figure.kind.rows != "timeline":
        return
    missing = sorted({c.label for c in figure.curves if not runs[c.run_id].get("record_timeline")})
    if missing:
        raise ConfigError(f"config/papers/{figure.paper}.yaml: figures.{figure.name} is a gantt figure, but its "
                          f"curves {', '.join(missing)} do not set record_timeline: true")


def _check_methods(options: dict[str, Any], methods: list[str], where: str) -> None:
    """Plot options that name methods (`dashed`, `style_independent`) name methods of the paper: a typo
    would otherwise draw the figure without them, silently."""
    for key in METHOD_OPTIONS:
        for value in options.get(key, []):
            if value not in methods:
                raise ConfigError(f"{where}: {key}: {value!r} is not a method of the paper; allowed values: "
                                  f"{', '.join(methods)}")


def _check_columns(options: dict[str, Any], engine: str, where: str) -> None:
    """A figure or claim may put on its x axis only a column that its engine logs as one, and read as a
    metric (`metric`, a plot's `y`, `metrics` or `log_metrics`) only one its engine logs."""
    allowed = {"x": ENGINES[engine].x, "metric": ENGINES[engine].metrics, "y": ENGINES[engine].metrics,
               "metrics": ENGINES[engine].metrics, "log_metrics": ENGINES[engine].metrics}
    for key, columns in allowed.items():
        values = options.get(key)
        for value in values if isinstance(values, list) else [values]:
            if value is not None and columns and value not in columns:
                what = "an x column" if key == "x" else "a metric"
                raise ConfigError(f"{where}: {key}: {value!r} is not {what} of engine {engine}; allowed values: "
                                  f"{', '.join(columns)}")
