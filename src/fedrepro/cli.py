"""Entry points shared by the Snakemake scripts and the `fedrepro` command."""

from __future__ import annotations

import argparse
import difflib
import errno
import logging
import random
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from fedrepro.errors import ConfigError, DataError, ResultsError
from fedrepro.schemas import DEVICES, SCALES, check, known_papers

if TYPE_CHECKING:
    from fedrepro.claims.sequential import Look

# Errors whose message is the whole story for the user: no traceback.
USER_ERRORS = (DataError, ConfigError, ResultsError)
ADHOC_DIR = Path("adhoc")  # `fedrepro run` results: git- and DVC-ignored, never the pipeline's results/
# `fedrepro audit`'s exit status (audit_papers), the first that applies: a mismatch outranks a run not verified
# (2 is argparse's, for a usage error)
AUDIT_MISMATCH, AUDIT_UNVERIFIED, AUDIT_VERIFIED = 1, 3, 0
AUDIT_EXIT = f"""\
exit status:
  {AUDIT_MISMATCH}  a finding is FAIL: what is on disk contradicts a record, a file was built from one that is gone, or
     a rerun differs (also: an error stopped the audit, its message on stderr)
  {AUDIT_UNVERIFIED}  no FAIL, but a run drawn by --rerun could not be verified here (UNVERIFIED, saying why: its
     run.json has no hash of its own content, it ran on CUDA and this machine has none, its inputs are missing)
  {AUDIT_VERIFIED}  neither (WARN findings included, and MISSING ones: outputs nothing on disk was built from; see the
     reports)

runs recorded on CUDA are drawn like the others: run the same command on a machine with CUDA to rerun them
(docs/audit.md, "Reruns of GPU runs")."""

DESCRIPTION = """\
fedrepro reproduces the figures and claims of federated-learning papers. The pipeline itself runs
through Snakemake (`snakemake --cores 2 fedpage`); this command covers what a person does by hand:
fetch one dataset, train one curve of a figure with changed settings, audit the results on disk."""
EPILOG = """\
examples:
  fedrepro list                        the papers; `fedrepro list tdcd`: its figures, claims, readings
  fedrepro fetch insurance --mirror ../shared/datasets
  fedrepro run fedvr fig3 --scale smoke --set rounds=5
  fedrepro audit                       every paper of config/config.yaml
  fedrepro audit fedvr --rerun 3       ...and recompute 3 random runs, comparing their metrics and facts
  fedrepro variants fedcluster_scale   which reduced-scale choice moves which FedCluster verdict
  fedrepro variants tdcd_quick         TDCD's step size per (dataset, N, K, Q) by its paper's grid protocol"""


def run_step(step: Callable[[], None], log_path: str | None = None, failure: Path | None = None) -> None:
    """Run a pipeline step; a user error ends it with its message instead of a stack trace. With `failure`, a step
    that fails or is killed leaves a record there (failures.py: what the audit names when the outputs Snakemake then
    deletes are missing), and one that succeeds removes it."""
    from fedrepro.failures import record_failure

    if log_path:
        logging.basicConfig(filename=log_path, level=logging.INFO,
                            format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if failure:  # until it ends: a step killed outright runs no handler below
        record_failure(failure, None, log_path)
    try:
        step()
    except (*USER_ERRORS, OSError) as error:
        message = _os_message(error) if isinstance(error, OSError) else str(error)
        if log_path:  # without a log file, logging would print the message a second time
            logging.getLogger("fedrepro").error("%s", message)
        if failure:
            record_failure(failure, message, log_path)
        print(f"fedrepro: error: {message}", file=sys.stderr)
        sys.exit(1)
    except Exception as error:  # a bug: its traceback follows, its record says what it was
        if failure:
            record_failure(failure, f"{type(error).__name__}: {error}", log_path)
        raise
    if failure:
        failure.unlink(missing_ok=True)


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return value


def _os_message(error: OSError) -> str:
    """A full disk, a lost permission, a missing file: one line naming the file and the cause."""
    name = errno.errorcode.get(error.errno or 0, "")
    where = f"{error.filename}: " if error.filename else ""
    return f"{where}{error.strerror or error}" + (f" ({name})" if name else "")


def run_count(text: str) -> int:
    """`--rerun K`: a count of runs, 0 or more (argparse names the option with the message)."""
    try:
        count = int(text)
    except ValueError:
        count = -1
    if count < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a count of runs (0 or more)")
    return count


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="fedrepro", description=DESCRIPTION, epilog=EPILOG,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    fetch = sub.add_parser("fetch", help="download (or copy from a mirror) and prepare one dataset")
    fetch.add_argument("dataset")
    fetch.add_argument("--mirror", default=None, help="mirror directory (default: $FEDREPRO_DATA_MIRROR)")
    fetch.add_argument("--data-dir", default="data", type=Path)
    listing = sub.add_parser("list", help="the papers, or one paper's figures, claims and readings")
    listing.add_argument("paper", nargs="?")
    one = sub.add_parser("run", help="train one curve of a figure outside Snakemake, with overrides (checks, tuning)")
    one.add_argument("paper")
    one.add_argument("figure")
    one.add_argument("--scale", default="quick", choices=list(SCALES))
    one.add_argument("--panel", help="panel name (default: the figure's first)")
    one.add_argument("--curve", help="curve label (default: the panel's first)")
    one.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override a run setting; VALUE is read as YAML (e.g. rounds=1, backend=loop)")
    one.add_argument("--out", default=ADHOC_DIR, type=Path,
                     help=f"results directory (default: {ADHOC_DIR}/, ignored by git and DVC; never results/)")
    one.add_argument("--device", default="auto", choices=list(DEVICES))
    one.add_argument("--threads", default=1, type=positive_int, help="torch threads per seed process (>= 1)")
    one.add_argument("--seed-workers", default=1, type=positive_int, metavar="K",
                     help="train K of its seeds at once, each in its own process of --threads threads")
    audit = sub.add_parser("audit", help="check that the results on disk are what their runs recorded",
                           description="For every figure of the papers, check the runs behind it (run.json, "
                           "metrics.csv hash, data hashes,\ncode commit, package versions, DVC record), the figure "
                           "tables and the claims; write audit/<paper>.md.", epilog=AUDIT_EXIT,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    audit.add_argument("papers", nargs="*", metavar="PAPER", help="papers to audit (default: `papers` of "
                       "config/config.yaml)")
    audit.add_argument("--scale", choices=list(SCALES), help="the scale to audit (default: every scale with results "
                       "of the paper on disk, results/<scale>/<paper>; with none, `scale` of config/config.yaml)")
    audit.add_argument("--rerun", type=run_count, default=0, metavar="K", help="recompute K runs chosen at random "
                       "among all runs on disk in a temporary directory and compare their metrics.csv byte for byte, "
                       "and their run.json summary")
    audit.add_argument("--seed", type=int, help="seed of the choice of runs to rerun (default: a fresh one, "
                       "printed)")
    audit.add_argument("--out", default=Path("audit"), type=Path, help="directory of the reports, one folder per "
                       "scale (default: audit/)")
    variants = sub.add_parser("variants", help="train and judge named variants of a scale's settings "
                              "(config/variants/<name>.yaml): a scale study or a tuning",
                              description="A scale study trains each named variant and judges the claims it lists "
                              "under each; a tuning trains each group of runs once per combination of its grid and "
                              "keeps the best score, with the per_run entries to freeze in the paper's configuration. "
                              "Writes results/<scale>/variants/<name>.csv and .md.")
    variants.add_argument("name", help="a file of config/variants/, e.g. fedcluster_scale or tdcd_quick")
    variants.add_argument("--jobs", type=int, default=2, help="runs trained at once, 1 torch thread each")
    cost = sub.add_parser("cost", help="what the jobs of a scale cost, per paper and rule (Snakemake's benchmark "
                          "records)")
    cost.add_argument("--scale", choices=list(SCALES), help="default: `scale` of config/config.yaml")
    cost.add_argument("--gpus", type=positive_int, metavar="N",
                      help="instead: the network runs' GPU-hours and wall time on N GPUs, from the GPU rates measured by "
                      "benchmarks/gpu_throughput.py (docs/performance.md)")
    cost.add_argument("--gpu", metavar="CARD", help="with --gpus: price from this card's records (h100, h200; a "
                      "card's full name works too); default: the one card on record")
    cost.add_argument("--seed-workers", type=positive_int, default=1, metavar="K",
                      help="with --gpus: each job trains K seeds at once (config seed_workers), priced at the rates "
                      "measured in K processes on one GPU (benchmarks/gpu_throughput.py --processes K)")
    stale = sub.add_parser("stale-runs", help="the runs of a scale on disk not trained by this code (run.json "
                           "code_sha256), for `snakemake --forcerun $(fedrepro stale-runs)`",
                           description="Prints the run.json of each run of the scale's run table (every paper and "
                           "reading) on disk that records other code than this checkout's, or none, one a line; the "
                           "counts go to stderr (docs/development.md, \"Numerics versions\").")
    stale.add_argument("--scale", choices=list(SCALES), help="default: `scale` of config/config.yaml")
    plan = sub.add_parser("seed-plan", help="the seeds the adaptive seed plan adds to the claims its first look left "
                          "open (config seed_plan: adaptive)", description="Reads each paper's sealed ledger at the "
                          "scale, the runs its claims read and their benchmark records; writes results/<scale>/"
                          "seed_plan.json (docs/claims_reference.md, \"Two looks: seeds where the claims need them\").")
    plan.add_argument("--scale", choices=list(SCALES), help="default: `scale` of config/config.yaml")
    plan.add_argument("--config", nargs="+", default=[], metavar="KEY=VALUE", type=config_entry,
                      help="settings over config/config.yaml, as `snakemake --config` takes them (max_seeds={quick: 12},"
                      " seed_budget_minutes={quick: 90}): give the same as to snakemake")
    docs = sub.add_parser("docs", help="rewrite the generated parts of docs/papers/<paper>.md (figures from the "
                          "configuration, expected results from the reference beside each page)")
    docs.add_argument("papers", nargs="*", metavar="PAPER", help="papers (default: all; with --from-results, those "
                      "with a ledger at that scale)")
    docs.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page's generated part is not "
                      "what the configuration and the reference give")
    docs.add_argument("--from-results", choices=list(SCALES), metavar="SCALE", help="first replace the papers' "
                      "reference at SCALE (docs/papers/<paper>/<scale>/: ledger, figures, curve digest, what the "
                      "runs ran on) with the results on disk")
    compare = sub.add_parser("compare", help="does my run agree? the local results against the committed reference",
                             description="For each paper with results here and a reference at the scale: each "
                             "claim's verdict there and here, each figure's largest relative difference between the "
                             "curves, and whether the code or the platform differ. Exit 0 when the verdicts agree.")
    compare.add_argument("papers", nargs="*", metavar="PAPER", help="papers (default: every paper with results here "
                         "and a reference)")
    compare.add_argument("--scale", choices=list(SCALES), help="default: `scale` of config/config.yaml")
    return top


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if args.command == "list":
        run_step(lambda: print(listing(args.paper)))
    if args.command == "run":
        run_step(lambda: run_one(args))
    if args.command == "audit":
        status: list[int] = []
        run_step(lambda: status.append(audit_papers(args)))
        sys.exit(status[0])
    if args.command == "variants":
        from fedrepro.variants.run import run_variants

        run_step(lambda: print(run_variants(args.name, jobs=args.jobs).to_string(index=False)))
    if args.command == "cost":
        if args.gpu and not args.gpus:
            parser().error("--gpu prices the GPU plan: give --gpus N too")
        run_step(lambda: print(gpu_plan_table(args.scale, args.gpus, args.seed_workers, args.gpu) if args.gpus
                               else job_cost_table(args.scale)))
    if args.command == "stale-runs":
        run_step(lambda: print(*stale_runs(args.scale), sep="\n"))
    if args.command == "seed-plan":
        run_step(lambda: print(seed_plan_file(args.scale, overrides=dict(args.config))))
    if args.command == "docs":
        stale: list[str] = []
        run_step(lambda: stale.extend(paper_docs(args)))
        if args.check and stale:
            print(f"not current (run `fedrepro docs`): {', '.join(stale)}", file=sys.stderr)
            sys.exit(1)
    if args.command == "compare":
        agree: list[bool] = []
        run_step(lambda: agree.append(compare_results(args)))
        sys.exit(0 if agree[0] else 1)
    if args.command == "fetch":
        from fedrepro.data import fetch_dataset, prepare_dataset, resolve_mirror

        def step() -> None:
            fetch_dataset(args.dataset, args.data_dir / "raw", resolve_mirror(args.mirror, "option --mirror"))
            prepare_dataset(args.dataset, args.data_dir / "raw" / args.dataset,
                            args.data_dir / "prepared" / f"{args.dataset}.npz")

        run_step(step)


def known(name: str, allowed: list[str], what: str) -> str:
    """`name` if it is one of `allowed`, else a ConfigError naming them, with the closest as a suggestion."""
    if name in allowed:
        return name
    close = difflib.get_close_matches(name, allowed, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"unknown {what} {name!r}{hint} {what}s: {', '.join(allowed)}")


def figure_sharing(text: str) -> dict[str, list[str]]:
    """What a paper's YAML anchors share between its figures, which the loaded mapping no longer shows: figure ->
    lines saying which figure it merges (`<<: *anchor`) and what it takes from it, and which other figures its
    curves reach (a curve added to fig2a is also fig2b's, 3a's and 3b's, so run once per figure's panels)."""
    import yaml

    root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    figures = next(v for k, v in root.value if k.value == "figures").value
    names = {id(node): key.value for key, node in figures}

    def curves(node: yaml.Node, key: str = "") -> set[int]:
        """The ids of the curve nodes under `node`, through aliases and merges (an alias is the anchored node)."""
        if isinstance(node, yaml.SequenceNode):
            return {id(item) for item in node.value} if key == "curves" else set().union(
                *(curves(item) for item in node.value))
        if isinstance(node, yaml.MappingNode):
            return set().union(*(curves(v, k.value) for k, v in node.value))
        return set()

    def keys(node: yaml.MappingNode) -> set[str]:
        """A mapping's keys, with those it merges."""
        return set().union(*(keys(v) if k.value == "<<" else {k.value} for k, v in node.value))

    reach = {key.value: curves(node) for key, node in figures}
    out: dict[str, list[str]] = {}
    for key, node in figures:
        name = key.value
        for k, v in node.value:
            if k.value == "<<" and id(v) in names:
                taken = sorted(keys(v) - {kk.value for kk, _ in node.value})
                out.setdefault(name, []).append(f"merges {names[id(v)]} (a YAML <<): {', '.join(taken)}")
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == "panels" and isinstance(v, yaml.MappingNode):  # `from`: the panels of other figures
                    sources = [item.value for kk, vv in v.value if kk.value == "from" for item in vv.value]
                    out.setdefault(name, []).append(f"reuses the panels and curves of {', '.join(sources)}")
        shared = [other for other, ids in reach.items() if other != name and ids & reach[name]]
        if shared:
            out.setdefault(name, []).append(f"its curves are also drawn in {', '.join(shared)} (YAML anchor)")
    return out


def _methods_drawn(figures: dict, name: str) -> set[str]:
    """The methods of a figure's curves, as written (a figure whose panels are `from` others: theirs)."""
    fig = figures[name]
    if isinstance(fig["panels"], dict):
        return set().union(*(_methods_drawn(figures, source) for source in fig["panels"]["from"]))
    return {c["method"] for c in fig.get("curves", []) + [c for p in fig["panels"] for c in p.get("curves", [])]}


def _paper_files(paper: str, config_dir: Path = Path("config")) -> tuple[dict, dict]:
    """A paper's configuration and claims files as written (no resolution: instant)."""
    import yaml

    known(paper, known_papers(), "paper")
    read = lambda kind: yaml.safe_load((config_dir / kind / f"{paper}.yaml").read_text())  # noqa: E731
    return read("papers"), read("claims")


def claims_heading(claims: list[dict]) -> str:
    """"claims (17 of the paper's; 4 implementation checks, 5 reported):": the paper's claims counted apart from
    the other kinds (claims/kinds.py)."""
    from collections import Counter

    from fedrepro.claims.kinds import DERIVED, IMPLEMENTATION, PAPER, REPORT, kind_of

    kinds = Counter(kind_of(c) for c in claims)
    others = ([f"{kinds[DERIVED]} derived from its numbers"] * bool(kinds[DERIVED])
              + [f"{kinds[IMPLEMENTATION]} implementation check{'s' * (kinds[IMPLEMENTATION] != 1)}"]
              * bool(kinds[IMPLEMENTATION]) + [f"{kinds[REPORT]} reported, not judged"] * bool(kinds[REPORT]))
    return f"claims ({kinds[PAPER]} of the paper's" + "".join(f"; {o}" for o in others) + "):"


def listing(paper: str | None, config_dir: Path = Path("config")) -> str:
    """What can be built: the papers with their titles, or one paper's figures, claims and readings."""
    if paper is None:
        return "\n".join(f"{key:12s} {_paper_files(key)[0]['title']}" for key in known_papers())
    cfg, claims = _paper_files(paper, config_dir)
    sharing = figure_sharing((config_dir / "papers" / f"{paper}.yaml").read_text())
    lines = [cfg["title"], "", "figures:"]
    for name, fig in cfg["figures"].items():
        lines.append(f"  {name:14s} {fig.get('title', '')}")
        lines += [f"  {'':14s} ^ {line}" for line in sharing.get(name, [])]
    lines += ["", "methods (algorithm: the figures with its curves):"]
    for name, settings in cfg["methods"].items():
        drawn = [f for f in cfg["figures"] if name in _methods_drawn(cfg["figures"], f)]
        algorithm = settings.get("algorithm", "the engine's one")
        lines.append(f"  {name:14s} {algorithm}: {', '.join(drawn) or 'none'}")
    from fedrepro.claims.kinds import PAPER, kind_of

    lines += ["", claims_heading(claims["claims"])]
    lines += [f"  {c['id']:10s} {c['check']:22s} {'' if kind_of(c) == PAPER else f'[{kind_of(c)}] '}"
              f"{c.get('quote', '')[:90]}" for c in claims["claims"]]
    readings = cfg.get("readings", {})
    if readings:
        lines += ["", "readings (alternatives: * run with --config readings=all):"]
        for name, r in readings.items():
            alternatives = [a + ("*" if "set" in alt else "") for a, alt in (r.get("alternatives") or {}).items()]
            lines.append(f"  {name:18s} ({r['source']}) {r['what']}"
                         + (f"; alternatives: {', '.join(alternatives)}" if alternatives else ""))
    return "\n".join(lines)


PIPELINE_RESULTS = Path("results")  # Snakemake's: written only under its lock, by its rules


def refuse_pipeline_results(out: Path) -> None:
    """A run by hand must not write into the pipeline's results/ (or anything inside it): Snakemake would
    neither know nor lock it, and the audit would take it for the pipeline's own."""
    resolved, results = out.resolve(), PIPELINE_RESULTS.resolve()
    if resolved == results or results in resolved.parents:
        raise ConfigError(f"--out {out}: that is inside the pipeline's {PIPELINE_RESULTS}/, which only Snakemake "
                          f"writes; use another directory (default: {ADHOC_DIR}/)")


def run_one(args: argparse.Namespace) -> None:
    """One run of the run table with settings overridden, checked by the engine's run schema and
    executed as rule `train` would; its data must be prepared (e.g. `snakemake data/prepared/<name>.npz`)."""
    import yaml

    from fedrepro.engines import ENGINES
    from fedrepro.engines.context import resolve_device
    from fedrepro.experiments.execute import execute_run
    from fedrepro.experiments.runtable import RunTable, run_id_of
    from fedrepro.experiments.store import read_record, run_files
    from fedrepro.validate import load_and_validate

    resolve_device(args.device)  # before any work: a missing GPU is a one-line message
    refuse_pipeline_results(args.out)
    known(args.figure, list(_paper_files(args.paper)[0]["figures"]), "figure")  # before resolving any config
    _, table = load_and_validate({"scale": args.scale}, Path("config"))
    figure = table.figure(args.paper, args.figure)
    curves = [c for c in figure.curves if (args.panel in (None, c.panel)) and (args.curve in (None, c.label))]
    if not curves:
        raise ConfigError(f"{args.figure}: no curve with panel {args.panel!r} and label {args.curve!r}; curves: "
                          + "; ".join(sorted({f"{c.panel} / {c.label}" for c in figure.curves})))
    spec = dict(table.runs[curves[0].run_id])
    for item in args.set:
        key, _, value = item.partition("=")
        spec[key] = yaml.safe_load(value)
    check(spec, ENGINES[spec["engine"]].schema, "fedrepro run --set")
    ENGINES[spec["engine"]].check_limits(spec, "fedrepro run --set")  # sizes, and the lengths of list settings
    run_id = run_id_of(spec)
    files = run_files(args.out, run_id)
    log_path = args.out / f"{run_id}.log"
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"run {run_id} ({curves[0].panel} / {curves[0].label}) -> {files.run_dir}, log {log_path}")
    inputs = RunTable(args.scale, {run_id: spec}, {}).input_files(run_id)
    execute_run(run_id, spec, files, Path(inputs["prepared"]),
                [Path(p) for p in inputs["provenance"]], device=args.device, threads=args.threads,
                seed_workers=args.seed_workers, log_path=log_path)
    record = read_record(files.record)
    print(f"wall {record['wall_seconds']:.1f} s on {record['device']['device']}; diverged: {record['diverged']}")
    print(files.metrics.read_text())


def gpu_plan_table(scale: str | None, gpus: int, seed_workers: int = 1, card: str | None = None) -> str:
    from fedrepro.results.gpu_cost import gpu_plan, load_rates, recorded_cards
    from fedrepro.validate import load_and_validate

    _, table = load_and_validate({"scale": scale} if scale else {}, Path("config"))
    rates = load_rates(processes=seed_workers, card=card)  # one card's: refuses a card without records
    return gpu_plan(table.runs, gpus, rates, seed_workers, card or recorded_cards()[0])


def every_run(scale: str | None):
    """(the scale, `scale` of config/config.yaml by default; its run table of every paper under every reading)."""
    import yaml

    from fedrepro.experiments.runtable import build_run_table
    from fedrepro.validate import with_defaults

    with open("config/config.yaml") as fh:
        config = with_defaults(yaml.safe_load(fh) or {})
    scale = scale or config["scale"]
    return scale, build_run_table({**config, "scale": scale, "papers": known_papers(), "readings": "all"},
                                  Path("config"))


def job_cost_table(scale: str | None) -> str:
    from fedrepro.results.cost import cost_summary, job_costs

    scale, table = every_run(scale)  # every reading's runs, to say which reading each recorded run belongs to
    return cost_summary(job_costs(scale, origins=table.run_origins()), scale)


def stale_runs(scale: str | None) -> list[str]:
    """The run.json of each run of the scale on disk whose code is not this checkout's (training_code.code_change; a
    record that cannot be read counts too), for `snakemake --forcerun`; the counts on stderr."""
    from fedrepro.experiments.store import read_record
    from fedrepro.layout import Layout
    from fedrepro.training_code import code_change

    scale, table = every_run(scale)
    changes: dict[str, str | None] = {}
    for run_id, spec in table.runs.items():
        record = Layout(scale).runs / run_id / "run.json"
        if record.is_file():
            try:
                changes[str(record)] = code_change(read_record(record), spec["engine"])
            except ResultsError:
                changes[str(record)] = "cannot be read"
    counts = Counter(changes.values())
    print(f"scale {scale}: {len(changes)} of its {len(table.runs)} run(s) on disk" + "".join(
        f"; {n} run(s): {change or 'trained by this code'}" for change, n in sorted(counts.items(), key=str)),
        file=sys.stderr)
    return [record for record, change in changes.items() if change]


def config_entry(text: str) -> tuple[str, Any]:
    """A `KEY=VALUE` setting as `snakemake --config` reads it: VALUE as YAML (validate.typed types what Snakemake
    leaves a string)."""
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    try:
        return key, yaml.safe_load(value) if value else ""
    except yaml.YAMLError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: its value is not YAML ({exc.problem})") from None


def seed_plan_file(scale: str | None, root: Path = Path("."), overrides: dict[str, Any] | None = None) -> str:
    """Write results/<scale>/seed_plan.json from the papers' sealed first-look ledgers at the scale
    (claims/seed_plan.py) and say what it plans. The ledgers say their look (ledger_look): a plan is made from the
    first look under adaptive; once the ledgers are at the second, the plan they were judged with is kept."""
    import dataclasses

    import yaml

    from fedrepro.claims.ledger import ledger_look
    from fedrepro.claims.seal import read_ledger
    from fedrepro.claims.seed_plan import FILE, claim_runs, claim_tables, make_plan, open_claims, run_costs, \
        settings_of, write_plan
    from fedrepro.claims.sequential import ADAPTIVE
    from fedrepro.experiments.runtable import build_run_table
    from fedrepro.layout import Layout
    from fedrepro.results.cost import job_costs
    from fedrepro.utils.patch import patched
    from fedrepro.utils.yaml_file import read_yaml
    from fedrepro.validate import with_defaults

    with open(root / "config" / "config.yaml") as fh:
        # --config laid over the file as Snakemake lays it: a mapping key by key
        config = with_defaults(patched(yaml.safe_load(fh) or {}, overrides or {}))
    scale = scale or config["scale"]
    out = Layout(scale, root)
    looks = {p: ledger_look(out.ledger(p, "json")) for p in known_papers() if out.ledger(p).exists()}
    if not looks:
        raise ResultsError(f"no ledger at scale {scale} ({out.results / 'claims'}): run the first look first "
                           f"(make reproduce SEEDS=adaptive SCALE={scale})")
    if any(look.number == 2 for look in looks.values()):
        if not (out.results / FILE).is_file():
            raise ResultsError(f"the ledgers at scale {scale} were judged at the second look, but "
                               f"{out.results / FILE} is gone: judge the first look again (make reproduce "
                               f"SEEDS=adaptive SCALE={scale}) to remake it")
        return f"{out.results / FILE}: kept (the ledgers at {scale} were judged with it at the second look)"
    first = sorted(p for p, look in looks.items() if look.mode == ADAPTIVE)
    if not first:
        raise ResultsError(f"the ledgers at scale {scale} ({', '.join(sorted(looks))}) were judged in one look "
                           f"(seed_plan fixed): judge the first look with `--config seed_plan=adaptive` "
                           f"(make reproduce SEEDS=adaptive SCALE={scale})")
    table = build_run_table({**config, "scale": scale, "papers": known_papers()}, root / "config")
    claims, specs = [], {}
    for paper in first:
        figures = table.paper_figures(paper)
        tables = claim_tables(figures, lambda name: out.table(paper, name))
        found = open_claims(paper, read_ledger(out.ledger(paper)),
                            claim_runs(read_yaml(root / "config" / "claims" / f"{paper}.yaml"),
                                       {f.name: f.run_ids for f in figures}, tables))
        claims += found
        specs.update({r: table.runs[r] for c in found for r in c.runs})
    settings = dataclasses.replace(settings_of(config, scale), mode=ADAPTIVE)  # the mode the ledgers were judged in
    plan = make_plan(claims, specs, run_costs(job_costs(scale, root), specs, out.results), settings)
    write_plan(plan, out.results / FILE)
    chosen = [c for c in plan["claims"] if c["planned"]]
    fixed = sorted(set(looks) - set(first))
    return (f"{out.results / FILE}: {len(chosen)} of {len(plan['claims'])} claims open for want of seeds planned, "
            f"{len(plan['runs'])} runs added, {plan['minutes']:.1f} of {plan['budget_minutes']:g} job minutes"
            + (f"; {', '.join(fixed)} judged in one look (seed_plan fixed), so not planned" if fixed else ""))


def paper_docs(args: argparse.Namespace) -> list[str]:
    from fedrepro.expected import write_reference
    from fedrepro.layout import Layout
    from fedrepro.paper_docs import write_docs
    from fedrepro.validate import load_and_validate

    papers = [known(p, known_papers(), "paper") for p in args.papers]
    if args.from_results:
        _, table = load_and_validate({"scale": args.from_results}, Path("config"))
        for paper in papers or [p for p in known_papers() if Layout(args.from_results).ledger(p).is_file()]:
            print(f"{write_reference(paper, args.from_results, table)}")
    return write_docs(papers or known_papers(), check=args.check)


def compare_results(args: argparse.Namespace) -> bool:
    """Print each paper's comparison with its reference; whether every verdict agrees."""
    from fedrepro.expected import compare, comparison_text, reference_scales
    from fedrepro.layout import Layout
    from fedrepro.validate import load_and_validate

    config, table = load_and_validate({"scale": args.scale} if args.scale else {}, Path("config"))
    scale = config["scale"]
    papers = [known(p, known_papers(), "paper") for p in args.papers] or [
        p for p in known_papers() if scale in reference_scales(p) and Layout(scale).ledger(p).is_file()]
    if not papers:
        raise ResultsError(f"nothing to compare at {scale}: no paper has both results here (results/{scale}/claims) "
                           f"and a reference (docs/papers/<paper>/{scale})")
    comparisons = [compare(paper, scale, table) for paper in papers]
    print("\n\n".join(comparison_text(c) for c in comparisons))
    return all(c.agree for c in comparisons)


def ledger_rebuilder(paper: str, scale: str, settings: dict, root: Path = Path("."), look: Look | None = None
                     ) -> Callable[[Path, Path], None]:
    """The ledger's own builder (claims/ledger.py write_ledger) with what rule claims gives it (RunTable.ledger_settings,
    the paper's claims file and figure tables; `look`, the seed plan's look its record names: ledger_look), writing
    the ledger and its record where the audit says: the audit compares them with the ones on disk (results/audit.py
    audit_paper). A second look whose seed_plan.json is not the plan it was judged with cannot be rebuilt: that is
    the audit's FAIL (claims/seed_plan.py plan_finding)."""

    def rebuild(csv: Path, record: Path) -> None:
        from fedrepro.claims.ledger import ledger_look, write_ledger
        from fedrepro.claims.seed_plan import plan_finding
        from fedrepro.layout import Layout

        out = Layout(scale, root)
        at = look or ledger_look(out.ledger(paper, "json"))
        wrong_plan = plan_finding(at, out.results)  # a second look is recomputed only with the plan it read
        if wrong_plan:
            raise ResultsError(wrong_plan)
        write_ledger(root / "config" / "claims" / f"{paper}.yaml", [out.table(paper, name) for name in settings["figures"]],
                     settings["figures"], scale, csv, record, settings["scale_note"], settings["readings"],
                     settings["alternatives"], settings["seeds"], at)

    return rebuild


def audit_papers(args: argparse.Namespace) -> int:
    """`fedrepro audit`: the papers' audits (results/audit.py), their reports and a summary; its exit status
    (AUDIT_EXIT)."""
    import yaml

    from fedrepro.layout import Layout
    from fedrepro.claims.ledger import ledger_look, ledger_readings
    from fedrepro.claims.seal import verify_ledger
    from fedrepro.claims.seed_plan import FILE as PLAN_FILE, planned_table, read_plan
    from fedrepro.results.audit import FAIL, UNVERIFIED, Checkout, audit_paper, choose_reruns, rerun
    from fedrepro.results.audit_report import summary, write_report
    from fedrepro.validate import load_and_validate, with_defaults

    root = Path(".")  # relative, so that the reports name files as results/<scale>/runs/<run_id>/...
    if not (root / "config" / "config.yaml").is_file():
        raise ConfigError(f"fedrepro audit: no config/config.yaml in {Path.cwd()}; run it at the root of the checkout")
    with open(root / "config" / "config.yaml") as fh:
        config = with_defaults(yaml.safe_load(fh) or {})
    papers = args.papers or config["papers"]
    for paper in papers:
        known(paper, known_papers(), "paper")
    if args.scale:
        chosen = [(p, args.scale, "given by --scale") for p in papers]
    else:
        chosen = [(p, s, f"results of {p} on disk ({Layout(s).results / p})") for s in SCALES for p in papers
                  if (Layout(s, root).results / p).is_dir()]
        chosen = chosen or [(p, config["scale"], "from config/config.yaml (no results on disk)") for p in papers]
    # the alternatives' tables are audited where the ledger judged them
    readings = {(p, s): ledger_readings(Layout(s, root).ledger(p)) for p, s, _ in chosen}
    looks = {(p, s): ledger_look(Layout(s, root).ledger(p, "json")) for p, s, _ in chosen}
    # a scale judged at the second look is audited with the runs its seed plan added (claims/seed_plan.py)
    plans = {s: read_plan(Layout(s, root).results / PLAN_FILE) if any(
        look.number == 2 for (_, ls), look in looks.items() if ls == s) else None for _, s, _ in chosen}
    tables = {(s, r): planned_table(load_and_validate({"scale": s, "readings": r}, root / "config")[1], plans[s])
              for s, r in {(s, readings[(p, s)]) for p, s, _ in chosen}}
    checkout = Checkout.of(root)
    audits = [audit_paper(p, tables[(s, readings[(p, s)])].paper_figures(p), s, f"`{s}`: {why}", checkout,
                          tables[(s, readings[(p, s)])].alternatives.get(p, []),
                          ledger_rebuilder(p, s, tables[(s, readings[(p, s)])].ledger_settings(p), root, looks[(p, s)]),
                          verify_ledger)
              for p, s, why in chosen]

    if args.rerun > 0:
        seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1_000_000)
        chosen = choose_reruns(audits, args.rerun, seed)
        print(f"rerun: seed {seed} chose {len(chosen)} run(s): {' '.join(chosen) or '(none has a run.json)'} "
              f"(`--seed {seed}` chooses the same)")
        for run_id in chosen:
            audit = next(a for a in audits if run_id in a.runs)
            run = audit.runs[run_id]
            run.findings.append(rerun(run, tables[(audit.scale, readings[(audit.paper, audit.scale)])].runs[run_id],
                                      checkout, Layout(audit.scale, root)))
            print(f"  {run_id}: {run.findings[-1].status} {run.findings[-1].detail}")

    reports = {}
    for audit in audits:
        path = args.out / audit.scale / f"{audit.paper}.md"
        write_report(audit, checkout, path)
        reports[(audit.scale, audit.paper)] = str(path)
    print(summary(audits, reports))
    statuses = {f.status for a in audits for f in a.all_findings}
    return AUDIT_MISMATCH if FAIL in statuses else AUDIT_UNVERIFIED if UNVERIFIED in statuses else AUDIT_VERIFIED
