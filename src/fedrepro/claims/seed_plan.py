"""The adaptive seed plan: which claims the first look left open for want of seeds get more, and the runs that
train them (config `seed_plan: adaptive`; the rule and why its error rates hold: claims/sequential.py,
docs/claims_reference.md "Two looks: seeds where the claims need them").

make_plan is pure. A claim is planned when its ledger row has cause `seeds`, its verdict is tested (p-values the
second look can hold to its level: a bootstrapped verdict, a share of resamples, has no level to split over two
looks, so it keeps its one), its `seeds_needed` is within reach of the scale's `max_seeds`
(sequential.within_reach), every run it reads (claim_runs: the runs its selectors match) has a cost estimate, and
its added seeds fit in what is left of the budget. Planned, every run it reads gets a run of the same settings that
trains the seeds from its last one up to `max_seeds` (`first_seed`: the seeds already trained, which are reused;
its own run id). The budget is job minutes, summed over jobs as `fedrepro cost` sums them. An added run's estimate
(RunCost) is its job's start (the job's wall time less the training its run.json records: the interpreter, the
imports, the data) plus the training per seed times the seeds added: a wall time per seed alone counts the start
once per seed, and at quick the start is about as long as a seed's training.

A curve reads its added seeds (planned_table): the run table with the plan gives each figure whose runs got seeds
their extensions, so its table holds every seed of each curve under the curve's own run id (results/tables.py
curve_rows), its `seeds` column counts them and `first_look_seeds` counts the first look's, and its caption says per
curve how many it has and for which claims they were added. Without a plan (fixed, or no seed_plan.json) every
figure is as it was, its table byte for byte.

Priority when the budget binds: the claim whose added seeds cost the fewest job minutes beyond what the plan
already holds goes first (a run it shares with a planned claim costs nothing more), ties in the order the claims
come (papers as listed, then the ledger's order). When the cheapest claim left does not fit, none does: every
other costs at least as much, so the rest are over budget. This decides the most claims a budget allows when
claims share no runs (the cheapest first), and it is deterministic.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

from fedrepro.claims.causes import SEEDS
from fedrepro.claims.checks.common import selected_runs
from fedrepro.claims.sequential import ADAPTIVE, LOOKS, Look, within_reach
from fedrepro.claims.validation import claim_params
from fedrepro.errors import ResultsError
from fedrepro.experiments.runtable import Figure, RunTable, run_id_of
from fedrepro.experiments.store import read_record, run_files
from fedrepro.results.tables import in_paper_terms, read_figure_table
from fedrepro.utils.atomic import atomic_path
from fedrepro.utils.digest import file_sha256

FILE = "seed_plan.json"  # results/<scale>/seed_plan.json


@dataclass(frozen=True)
class Settings:
    """A scale's seed plan settings (config `seed_plan`, `max_seeds`, `seed_budget_minutes`)."""
    mode: str
    max_seeds: int
    budget_minutes: float


def settings_of(config: dict[str, Any], scale: str) -> Settings:
    """The settings of `scale` from the validated top-level config (validate.with_defaults)."""
    return Settings(config["seed_plan"], int(config["max_seeds"][scale]), float(config["seed_budget_minutes"][scale]))


@dataclass(frozen=True)
class OpenClaim:
    """A claim the first look left open for want of seeds: its ledger's `seeds_needed`, the runs it reads and
    whether its verdict is tested (its ledger row has p-values; else bootstrapped)."""
    paper: str
    claim: str
    seeds_needed: str
    runs: tuple[str, ...]
    tested: bool = True

    @property
    def key(self) -> str:
        return f"{self.paper}/{self.claim}"


def open_claims(paper: str, ledger: pd.DataFrame, runs_of: dict[str, list[str]]) -> list[OpenClaim]:
    """The rows of a paper's ledger (read_ledger: cells as text) whose cause is seeds, with the runs each claim
    reads (`runs_of`: claim id -> the run ids of its figures at this scale), in the ledger's order. A row is tested
    when it has a p_pass (the ledger writes one for a tested check only)."""
    rows = ledger[ledger["cause"] == SEEDS]
    return [OpenClaim(paper, row.claim_id, row.seeds_needed, tuple(sorted(runs_of.get(row.claim_id, []))),
                      row.p_pass != "") for row in rows.itertuples()]


def claim_runs(claims_cfg: dict[str, Any], figure_runs: dict[str, list[str]],
               tables: dict[str, pd.DataFrame] | None = None) -> dict[str, list[str]]:
    """Claim id -> the run ids it reads: of the runs of its figures made at this scale (`figure_runs`: figure name
    -> run ids, RunTable's Figure.run_ids of the paper's figures), those whose rows its selectors match in its
    figures' `tables` (checks/common.py selected_runs, as the checks read them: in the paper's terms); every run of
    its figures where it has no selector, where a table is absent, or where a selector matches nothing."""
    out = {}
    for c in claims_cfg["claims"]:
        every = sorted({r for f in c.get("figures", []) for r in figure_runs.get(f, [])})
        figures = c.get("figures", [])
        read = None
        if tables is not None and figures and all(f in tables for f in figures):
            read = selected_runs(claim_params(c), pd.concat([tables[f] for f in figures], ignore_index=True))
        runs = {table_run(r) for r in read or ()} & set(every)
        out[c["id"]] = sorted(runs) if runs else every
    return out


def table_run(run_id: str) -> str:
    """The run of a figure table's run_id: a run drawn against several x columns is one curve each, its rows
    carrying <run_id>/<x_source> (results/tables.py figure_table; TDCD's time_tc10 and time_tc100 panels)."""
    return run_id.split("/")[0]


def claim_tables(figures: list[Figure], table_path: Callable[[str], Path]) -> dict[str, pd.DataFrame]:
    """Each figure's table on disk (`table_path`: figure name -> its path) as the claims read it, in the paper's
    terms (results/tables.py in_paper_terms); a figure without a table is left out."""
    out = {}
    for f in figures:
        if table_path(f.name).is_file():
            out[f.name] = in_paper_terms(read_figure_table(table_path(f.name)), f.claims_settings()["labels"])[0]
    return out


def extension(spec: dict[str, Any], max_seeds: int) -> dict[str, Any]:
    """The spec of the run that brings `spec`'s run to `max_seeds` seeds: the same settings, its seeds from the
    first one the run has not trained (seeding.seeds_of: a seed's draws do not depend on its run)."""
    return {**spec, "first_seed": spec.get("first_seed", 0) + spec["seeds"], "seeds": max_seeds - spec["seeds"]}


@dataclass(frozen=True)
class RunCost:
    """A run's estimated job minutes: `start` once per job, `per_seed` for each seed it trains."""
    start: float
    per_seed: float

    def minutes(self, seeds: int) -> float:
        return self.start + self.per_seed * seeds


def make_plan(claims: Iterable[OpenClaim], specs: dict[str, dict[str, Any]],
              costs: dict[str, RunCost], settings: Settings) -> dict[str, Any]:
    """The plan (module docstring): per claim whether it is planned and why, per added run its spec, what it
    extends, its seeds and its estimated job minutes. `specs`: run id -> resolved spec of every run the claims
    read; `costs`: run id -> its RunCost (run_costs; a run without one blocks its claims)."""
    claims = list(claims)
    m = settings.max_seeds
    verdicts: dict[str, tuple[bool, str, str]] = {}  # claim -> planned, why (a word), reason
    candidates = []
    for c in claims:
        have = min((specs[r]["seeds"] for r in c.runs), default=m)
        missing = [r for r in c.runs if specs[r]["seeds"] < m and r not in costs]
        if settings.mode != ADAPTIVE:
            verdicts[c.key] = False, "one look", f"seed_plan {settings.mode}: one look"
        elif not c.tested:
            verdicts[c.key] = False, "bootstrapped", ("bootstrapped: a share of resamples has no level to split over "
                                                      "two looks, so its first look's verdict stands")
        elif not c.runs or have >= m:
            verdicts[c.key] = False, "at max_seeds", f"its runs have {have} seeds, max_seeds {m}: nothing to add"
        elif not within_reach(c.seeds_needed, have, m):
            verdicts[c.key] = False, "beyond max_seeds", f"seeds_needed {c.seeds_needed} is not within max_seeds {m}"
        elif missing:
            verdicts[c.key] = False, "no cost estimate", (f"no cost estimate for run {missing[0]} (no benchmark "
                                                          f"record of its paper's runs)")
        else:
            candidates.append(c)

    def cost(c: OpenClaim, planned: set[str]) -> float:
        return sum(costs[r].minutes(m - specs[r]["seeds"]) for r in c.runs
                   if r not in planned and specs[r]["seeds"] < m)

    planned: set[str] = set()
    spent = 0.0
    left = list(candidates)
    while left:
        best = min(left, key=lambda c: cost(c, planned))  # min keeps the first of equal costs: the claims' order
        more = cost(best, planned)
        if spent + more > settings.budget_minutes:
            for c in left:
                verdicts[c.key] = False, "over budget", (f"over budget: {cost(c, planned):.1f} more job minutes, "
                                                         f"{settings.budget_minutes - spent:.1f} of "
                                                         f"{settings.budget_minutes:g} left")
            break
        planned.update(r for r in best.runs if specs[r]["seeds"] < m)
        spent += more
        verdicts[best.key] = True, "planned", (f"seeds_needed {best.seeds_needed} within max_seeds {m}: its runs "
                                               f"brought to {m} seeds, {more:.1f} more job minutes")
        left.remove(best)
    runs = []
    for r in sorted(planned):
        spec = extension(specs[r], m)
        runs.append({"run_id": run_id_of(spec), "extends": r, "first_seed": spec["first_seed"], "seeds": spec["seeds"],
                     "minutes": round(costs[r].minutes(spec["seeds"]), 3),
                     "claims": [c.key for c in claims if r in c.runs and verdicts[c.key][0]], "spec": spec})
    return {"mode": settings.mode, "max_seeds": m, "budget_minutes": settings.budget_minutes,
            "levels": {"first": LOOKS[0], "second": LOOKS[1]} if settings.mode == ADAPTIVE else {},
            "minutes": round(spent, 3),
            "claims": [{"paper": c.paper, "claim": c.claim, "seeds_needed": c.seeds_needed, "runs": list(c.runs),
                        "planned": verdicts[c.key][0], "why": verdicts[c.key][1], "reason": verdicts[c.key][2]}
                       for c in claims],
            "runs": runs}


def run_costs(jobs: pd.DataFrame, specs: dict[str, dict[str, Any]], results: Path) -> dict[str, RunCost]:
    """The RunCost of each run in `specs`, from `fedrepro cost`'s job table (results/cost.py job_costs: the train
    jobs' wall seconds, by run id) and each run's record under `results` (its training's wall_seconds): its own,
    else the medians of its paper's recorded runs; absent where its paper has none."""
    train = jobs[(jobs["rule"] == "train") & jobs["job"].isin(list(specs))]
    own = {}
    for rid, wall in zip(train["job"], train["wall_s"]):
        try:
            trained = min(float(read_record(run_files(results, rid).record)["wall_seconds"]), wall)
        except (OSError, ResultsError, KeyError, TypeError, ValueError):
            continue  # a job whose run record is gone or unreadable estimates nothing
        own[rid] = RunCost((wall - trained) / 60, trained / 60 / specs[rid]["seeds"])
    by_paper: dict[str, list[RunCost]] = {}
    for rid, cost in own.items():
        by_paper.setdefault(specs[rid].get("paper", ""), []).append(cost)
    medians = {paper: RunCost(float(pd.Series([c.start for c in cs]).median()),
                              float(pd.Series([c.per_seed for c in cs]).median()))
               for paper, cs in by_paper.items()}
    return {rid: own.get(rid) or medians[spec.get("paper", "")] for rid, spec in specs.items()
            if rid in own or spec.get("paper", "") in medians}


def write_plan(plan: dict[str, Any], path: Path) -> None:
    """The plan as JSON, atomically (a failure leaves the file as it was)."""
    with atomic_path(path, suffix=".json") as tmp:
        tmp.write_text(json.dumps(plan, indent=2, sort_keys=False) + "\n")


# what each entry of a plan holds (make_plan), checked before any reader indexes it
PLAN_CLAIM_KEYS = ("paper", "claim", "planned", "why", "runs")
PLAN_RUN_KEYS = ("run_id", "extends", "first_seed", "seeds", "claims", "spec")
PLAN_NUMBERS = {"max_seeds": int, "budget_minutes": (int, float), "minutes": (int, float)}


def read_plan(path: Path) -> dict[str, Any] | None:
    """The plan at `path` (results/<scale>/seed_plan.json), or None where there is none; a ResultsError, in one
    line, for a file that is not a plan as make_plan writes it (`null`, a list, an entry without its keys)."""
    if not path.is_file():
        return None
    remake = "remake it with `fedrepro seed-plan`"
    try:
        plan = json.loads(path.read_text())
    except ValueError as exc:
        raise ResultsError(f"{path} is not a seed plan (not JSON: {exc}); {remake}") from None
    if not (isinstance(plan, dict) and isinstance(plan.get("claims"), list) and isinstance(plan.get("runs"), list)):
        raise ResultsError(f"{path} is not a seed plan (a mapping with lists 'claims' and 'runs'); {remake}")
    wrong = [k for k, kind in PLAN_NUMBERS.items()
             if not isinstance(plan.get(k), kind) or isinstance(plan.get(k), bool)]
    if wrong:
        raise ResultsError(f"{path}: {', '.join(wrong)} not a number as `fedrepro seed-plan` writes it; {remake}")
    for entries, keys in (("claims", PLAN_CLAIM_KEYS), ("runs", PLAN_RUN_KEYS)):
        for i, entry in enumerate(plan[entries]):
            lacking = [k for k in keys if not isinstance(entry, dict) or k not in entry]
            if lacking:
                raise ResultsError(f"{path}: {entries}[{i}] lacks {', '.join(lacking)}; {remake}")
    return plan


def stage_plan(mode: str, results: Path, max_seeds: int) -> dict[str, Any] | None:
    """The plan a workflow under `mode` trains: under adaptive the one at results/<scale>/seed_plan.json once
    `fedrepro seed-plan` has made it (the second stage), else None (fixed, or the first stage). Before its runs are
    trained, its claims are checked against the first look's ledgers and the scale's `max_seeds` (the config's, not
    the plan's: planned_claims_problems)."""
    if mode != ADAPTIVE:
        return None
    plan = read_plan(results / FILE)
    problems = planned_claims_problems(plan, results, max_seeds) if plan else []
    if problems:
        raise ResultsError(f"{results / FILE} is not what `fedrepro seed-plan` makes from the first look's ledgers; "
                           f"refused before training: " + "; ".join(problems) + "; remake it with `fedrepro seed-plan`")
    return plan


def planned_claims_problems(plan: dict[str, Any], results: Path, max_seeds: int) -> list[str]:
    """What makes a plan's claims other than make_plan's from the first look's ledgers on disk and the scale's
    `max_seeds`: a plan of another max_seeds; a planned claim that its paper's first-look ledger does not leave open
    with cause `seeds`, a seeds_needed within max_seeds and p-values (a bootstrapped verdict is never planned); an
    added run that serves no planned claim or extends a run none of its claims reads. (planned_table checks that
    each added run brings its run to exactly max_seeds.) Ledgers already at the second look were judged with this
    plan (their record holds its sha256: plan_finding, the audit's check) and are not read again; a paper without a
    ledger has no first look to plan from."""
    from fedrepro.claims.ledger import ledger_look  # (ledger reads the seed plan's looks: imported when needed)
    from fedrepro.claims.seal import read_ledger

    planned = {f"{c['paper']}/{c['claim']}": c for c in plan["claims"] if c["planned"]}
    problems = [] if plan["max_seeds"] == max_seeds else [
        f"its max_seeds is {plan['max_seeds']}, the scale's is {max_seeds}"]
    looks: dict[str, tuple[Look, pd.DataFrame | None]] = {}
    for key, c in planned.items():
        paper = c["paper"]
        ledger = results / "claims" / f"{paper}.csv"
        if paper not in looks and ledger.is_file():
            look = ledger_look(ledger.with_suffix(".json"))
            looks[paper] = look, read_ledger(ledger) if look.mode == ADAPTIVE and look.number == 1 else None
        look, rows = looks.get(paper, (None, None))
        if look is not None and look.mode != ADAPTIVE:
            problems.append(f"planned claim {key}: {paper} was judged in one look (seed_plan {look.mode})")
        if rows is None:
            continue
        row = rows[rows["claim_id"] == c["claim"]]
        if row.empty:
            problems.append(f"planned claim {key} is not in {paper}'s first-look ledger")
        elif row.iloc[0]["cause"] != SEEDS or not within_reach(row.iloc[0]["seeds_needed"], 0, max_seeds):
            problems.append(f"planned claim {key} is {row.iloc[0]['status']} with cause "
                            f"'{row.iloc[0]['cause'] or 'none'}' and seeds_needed '{row.iloc[0]['seeds_needed']}' in "
                            f"the first look's ledger: only a claim open for want of seeds within max_seeds "
                            f"{max_seeds} is planned")
        elif not open_claims(paper, row, {c["claim"]: []})[0].tested:
            problems.append(f"planned claim {key} is bootstrapped in the first look's ledger: its verdict has no "
                            f"level to split over two looks, so it is never planned")
    for r in plan["runs"]:
        serves = [k for k in r["claims"] if k in planned]
        if not serves or any(r["extends"] not in planned[k].get("runs", ()) for k in serves):
            problems.append(f"added run {r['run_id']} (extends {r['extends']}) serves no planned claim that reads "
                            f"the run it extends")
    return problems


def stage_look(mode: str, plan: dict[str, Any] | None, paper: str, results: Path, max_seeds: int = 0) -> Look:
    """The look rule claims judges `paper` at (stage_plan's plan): one look under fixed, the first under adaptive
    before the plan, the second with the paper's planned claims once it is made, and the plan file's sha256; under
    adaptive with the scale's `max_seeds` (Look.one_look)."""
    max_seeds = max_seeds if mode == ADAPTIVE else 0
    if plan is None:
        return Look(mode, max_seeds=max_seeds)
    return Look(mode, 2, tuple(c["claim"] for c in plan["claims"] if c["planned"] and c["paper"] == paper),
                file_sha256(results / FILE), max_seeds)


def plan_finding(look: Look, results: Path) -> str:
    """What is wrong with the plan a ledger judged at the second look says it read (its record's sha256 of
    results/<scale>/seed_plan.json), or "" where nothing is (or the ledger is of one look or the first)."""
    if look.number != 2:
        return ""
    path = results / FILE
    if not path.is_file():
        return f"{path} is gone, yet the ledger was judged with it at the second look"
    if file_sha256(path) != look.plan:
        return (f"{path} is not the plan the ledger was judged with (sha256 {file_sha256(path)[:12]}, the record says "
                f"{look.plan[:12] or 'none'}): rerun snakemake, or remake the first look")
    return ""


def plan_text(plan: dict[str, Any]) -> str:
    """The plan in a paragraph (the report's front page): what it planned, what it added and why the others not."""
    chosen = [f"{c['paper']} {c['claim']}" for c in plan["claims"] if c["planned"]]
    why = Counter(c["why"] for c in plan["claims"] if not c["planned"])
    runs = Counter(r["extends"] for r in plan["runs"])
    return (f"Seed plan ({plan['mode']}, max_seeds {plan['max_seeds']}, budget {plan['budget_minutes']:g} job "
            f"minutes): {len(chosen)} of {len(plan['claims'])} claims open for want of seeds got their runs brought "
            f"to {plan['max_seeds']} seeds and a second look"
            + (f" ({', '.join(chosen)})" if chosen else "")
            + f"; {len(runs)} runs extended, {sum(r['seeds'] for r in plan['runs'])} seeds added, an estimated "
            f"{plan['minutes']:.1f} job minutes. Not planned: "
            + ("; ".join(f"{n} {reason}" for reason, n in why.most_common()) or "none") + ".")


def planned_table(table: RunTable, plan: dict[str, Any] | None) -> RunTable:
    """The run table with the plan's added runs (module docstring): each added run's spec among the runs, and each
    figure that reads a run they extend with its extensions and its caption's note on the seeds. The table itself
    without a plan or without added runs. Alternative readings' figures keep their seeds: the plan adds to the
    primary runs the ledger judges."""
    runs = (plan or {}).get("runs", [])
    if not runs:
        return table
    unknown = sorted({r["extends"] for r in runs} - set(table.runs))
    if unknown:
        raise ResultsError(f"{FILE} adds seeds to run(s) {', '.join(unknown)} that the configuration no longer has at "
                           f"scale {table.scale}; remake it with `fedrepro seed-plan`")
    # an added run is the extension of the run it extends and nothing else: a spec edited by hand (K = 100 -> 1)
    # would train other settings under that run's curve
    for r in runs:
        own = table.runs[r["extends"]]
        expected = extension(own, plan["max_seeds"])  # to max_seeds, no more (claims/sequential.py)
        if r["spec"] != expected or r["run_id"] != run_id_of(expected) or r["first_seed"] != expected["first_seed"]:
            differ = sorted(k for k in set(expected) | set(r["spec"]) if expected.get(k) != r["spec"].get(k))
            raise ResultsError(f"{FILE}: added run {r['run_id']} is not an extension of run {r['extends']} "
                               f"(seeds from {r['first_seed']}; differs in {', '.join(differ) or 'its run id or first seed'}); "
                               f"refused before training; remake it with `fedrepro seed-plan`")
    by_run: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(runs, key=lambda r: (r["extends"], r["first_seed"])):
        by_run.setdefault(r["extends"], []).append({k: r[k] for k in ("run_id", "first_seed", "seeds", "claims")})
    figures = {key: _with_seeds(f, by_run, table.runs) for key, f in table.figures.items()}
    return dataclasses.replace(table, runs={**table.runs, **{r["run_id"]: r["spec"] for r in runs}}, figures=figures)


def _with_seeds(figure: Figure, by_run: dict[str, list[dict[str, Any]]], specs: dict[str, dict[str, Any]]) -> Figure:
    """The figure with the extensions of its curves' runs, its caption saying per curve how many seeds it has and
    why ("Seeds added by the seed plan: <curve> (<panel>) 10 (3 at the first look, 7 for claims p/A, p/B); ...")."""
    mine = {c.run_id: by_run[c.run_id] for c in figure.curves if c.run_id in by_run}
    if not mine:
        return figure
    extended = dataclasses.replace(figure, extensions=mine)
    said = [f"{c.label} ({c.panel}) {extended.curve_seeds(c.run_id, specs[c.run_id])} ({specs[c.run_id]['seeds']} at "
            f"the first look, {sum(e['seeds'] for e in mine[c.run_id])} for claims "
            f"{', '.join(dict.fromkeys(k for e in mine[c.run_id] for k in e['claims']))})"
            for c in figure.curves if c.run_id in mine]
    note = "Seeds added by the seed plan: " + "; ".join(said) + "."
    return dataclasses.replace(extended, caption=(figure.caption.rstrip() + " " + note).strip())
