"""The claims ledger: config/claims/<paper>.yaml + figure tables -> results/claims/<paper>.csv."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from fedrepro.claims import causes
from fedrepro.claims import support as bootstrap_rule
from fedrepro.claims.checks import CHECKS, EQUIVALENCE, TESTED, UNITS, Result, check_parameters
from fedrepro.claims.checks.common import at_level
from fedrepro.claims.checks.inference import ALPHA, seed_test
from fedrepro.claims.data import ClaimData
from fedrepro.claims.data_notes import stand_ins, with_data_notes
from fedrepro.claims.kinds import DERIVED, IMPLEMENTATION, REPORT, counts_text, kind_of, verdict_counts
from fedrepro.claims.kinds import PAPER as PAPER_KIND
from fedrepro.claims.seal import ledger_seal
from fedrepro.claims.sequential import Look
from fedrepro.claims.robustness import DEPENDS, NOT_EVALUATED, TOO_FEW_SEEDS, Alternative, category, decode, encode, \
    unjudged
from fedrepro.claims.validation import FigureLabels, claim_params, validate_claims
from fedrepro.errors import ConfigError, ResultsError
from fedrepro.experiments.runtable import FIRST_LOOK_SEEDS
from fedrepro.results.tables import in_paper_terms, merged_labels, read_figure_table
from fedrepro.utils.atomic import atomic_path
from fedrepro.utils.yaml_file import read_yaml
from fedrepro.verdicts import FAIL, INCONCLUSIVE, PASS

# kind: paper, implementation or report (claims/kinds.py); cause, seeds_needed: why a FAIL or INCONCLUSIVE row is so,
# and for cause seeds how many would decide it (claims/causes.py); check_says: the check's own verdict on these data
# where the row's differs (a stand-in, an assumed reading or a scale declared undecided kept it from the paper);
# departs: where the check departs from the paper's sentence at this scale (a reduced target, words not tested);
# robustness, alternatives: the verdict under the alternative readings it rests on, a category and each alternative
# as JSON (claims/robustness.py);
# p_pass, p_fail: the p-values of the claim's test (a check that tests its seeds, checks.TESTED): PASS when
# p_pass <= alpha, FAIL when p_fail <= alpha (checks/inference.py); error_rate: what the verdict's rule states
# (claims/support.py ERROR_RATES); equivalence_margin: the margin M of an equivalence claim (|effect| < M, tested by
# TOST; checks.EQUIVALENCE), as its claims file declares it, in its check's units; support: share of bootstrap resamples in which the claim holds, for the other
# checks (empty: NA, the reason in note); margin: the check's distance from its threshold in its own units
# (> 0: holds); margin_se: margin / its bootstrap s.d.
COLUMNS = ["claim_id", "kind", "figure", "scale", "status", "cause", "check_says", "departs", "seeds_needed",
           "robustness", "alternatives", "p_pass", "p_fail", "error_rate", "equivalence_margin", "support", "margin",
           "margin_se", "measured", "expected", "note", "quote"]
# the structured fields of each row that the ledger's JSON record repeats (write_ledger)
RECORDED = ["claim_id", "kind", "status", "cause", "check_says", "departs", "seeds_needed", "robustness",
            "equivalence_margin"]
# reading -> alternative -> (figure tables, their label columns) of the figures the alternative changes, as run
Alternatives = dict[str, dict[str, tuple[dict[str, pd.DataFrame], dict[str, list[str]]]]]


def evaluate_claims(claims_cfg: dict[str, Any], tables: dict[str, pd.DataFrame], scale: str,
                    labels: dict[str, list[str]], readings: dict[str, dict[str, Any]] | None = None,
                    alternatives: Alternatives | None = None, look: Look = Look()) -> pd.DataFrame:
    """The ledger of the claims on the figure `tables`, whose label columns are `labels` (by figure
    name, Figure.label_columns). `readings`: the paper's (config/papers/<paper>.yaml `readings`), by name;
    a claim that rests on one whose source is our assumption is never PASS or FAIL (rests_on_readings).
    `alternatives`: reading -> alternative -> (tables, labels) of the figures it changes, as run; each claim
    that rests on the reading is judged again under it (column `robustness`; None: not evaluated). `look`: the
    seed plan's look (claims/sequential.py): the level of each tested verdict and of seeds_needed. At the second
    look, its `planned` claims (ids: the plan's) are judged on every seed at its level, and every other claim as at
    the first look, on its runs' first-look seeds (first_look): seeds added for another claim never change its data,
    and its note says so. The alternatives are judged on the first look's seeds (their runs get none added)."""
    with seed_test(claims_cfg.get("seed_test", "t")):
        return _evaluate(claims_cfg, tables, scale, labels, readings, alternatives, look)


def _evaluate(claims_cfg: dict[str, Any], tables: dict[str, pd.DataFrame], scale: str, labels: dict[str, list[str]],
              readings: dict[str, dict[str, Any]] | None, alternatives: Alternatives | None, look: Look) -> pd.DataFrame:
    tables, labels = _in_paper_terms(tables, labels)
    tables, others = the_papers_curves(tables, claims_cfg.get("methods"))
    readings = readings or {}
    first = {name: first_look(t) for name, t in tables.items()}
    levels = {Look(look.mode).level, ALPHA}  # the first look's, and one look's (Look.one_look)
    judges = {level: Judge(first, labels, scale, level) for level in levels}  # the first look's data
    second = Judge(tables, labels, scale, look.level) if look.number == 2 else None
    under: dict[float, dict[tuple[str, str], Judge]] = {level: {} for level in levels}
    for reading, alts in (alternatives or {}).items():
        for name, (alt_tables, alt_labels) in alts.items():
            if alt_tables:
                alt_tables, alt_labels = _in_paper_terms(alt_tables, alt_labels)
                alt_tables = the_papers_curves(alt_tables, claims_cfg.get("methods"))[0]
                for level in levels:
                    under[level][(reading, name)] = Judge({**first, **alt_tables}, {**labels, **alt_labels}, scale,
                                                          level)
    rows = []
    for claim in claims_cfg["claims"]:
        once = look.one_look(_fewest_seeds(first, claim))
        level = ALPHA if once else Look(look.mode).level
        judge = judges[level]
        this = second if second is not None and claim["id"] in look.planned else judge
        status, ruling, result, support, figures, rule, alone = this(claim)
        if once and support.kind == "test":
            ruling = " ".join(x for x in (ruling, f"One look at {ALPHA:.0%}: its curves have max_seeds "
                                                  f"({look.max_seeds}) seeds already, so none can be added.") if x)
        left_out = sorted({m for f in figures for m in others.get(f, [])})
        if left_out:
            ruling = " ".join(x for x in (ruling, f"Curves not the paper's, left out: {', '.join(left_out)}.") if x)
        if this is judge and look.number == 2 and any(len(first[f]) < len(tables[f]) for f in figures):
            ruling = " ".join(x for x in (ruling, "Judged on its runs' first-look seeds: the seeds the seed plan "
                                                  "added to them for other claims are not read.") if x)
        alts = robustness(claim, status, readings, alternatives, under[level], this)
        robust = category(alts, bool(_rests(claim, readings)))
        status, ruling = rests_on_readings(claim, readings, status, ruling)
        kind = kind_of(claim)
        stand_in = stand_ins(figures, tables) if kind in (PAPER_KIND, DERIVED) else []
        status, ruling = on_stand_ins(stand_in, alone, status, ruling)
        na = f"support n/a: {support.reason}" if support.kind in ("none", "invariant") else ""
        tested = support.kind == "test"
        margin = equivalence_margin(claim)
        why = "" if kind == REPORT else causes.cause(
            status, reading=bool(assumed(claim, readings)) or robust == DEPENDS, scale=rule == causes.SCALE,
            rule="" if rule == causes.SCALE else rule, test=result.test, level=look.estimate_level,
            stand_in=bool(stand_in), unjudged=bool(pending := unjudged(alts)))
        if why == causes.READING and status == FAIL and pending and robust != DEPENDS:  # (an assumed one: open)
            ruling = " ".join(x for x in (ruling, "Not yet the paper's FAIL: alternative readings not judged here: "
                                                  f"{', '.join(a.name for a in pending)}.") if x)
        rows.append({
            "claim_id": claim["id"], "kind": kind, "figure": " ".join(figures or claim.get("figures", [])),
            "scale": scale, "status": status, "cause": why, "check_says": alone if alone != status else "",
            "departs": departs(claim, scale),
            "seeds_needed": causes.seeds_text(causes.seeds_estimate(result.test, look.estimate_level), support.units,
                                              max(bootstrap_rule.MIN_UNITS, claim.get("min_seeds", 1)))
            if why == causes.SEEDS else "",
            "robustness": robust, "alternatives": encode(alts),
            "p_pass": _rounded(result.p_pass, 3) if tested else math.nan,
            "p_fail": _rounded(result.p_fail, 3) if tested else math.nan,
            "error_rate": support.error_rate(equivalence=not math.isnan(margin),
                                             seed_test=claims_cfg.get("seed_test", "t")),
            "equivalence_margin": margin, "support": _rounded(support.share, 3),
            "margin": _rounded(result.margin, 4),
            "margin_se": _rounded(result.margin / support.margin_sd, 3) if support.margin_sd > 0 else math.nan,
            "measured": result.measured, "expected": claim.get("expected", ""),
            "note": " ".join(x for x in (ruling, result.note, na, claim.get("note", "")) if x).strip(),
            "quote": claim.get("quote", ""),
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def _fewest_seeds(tables: dict[str, pd.DataFrame], claim: dict[str, Any]) -> int:
    """The fewest seeds of any curve in the claim's figures at the first look (FIRST_LOOK_SEEDS where the plan added
    seeds, else `seeds`; 0 where neither is there): the same at either look."""
    counts = []
    for figure in claim.get("figures", []):
        table = tables.get(figure, pd.DataFrame())
        column = FIRST_LOOK_SEEDS if FIRST_LOOK_SEEDS in table else "seeds"
        if column in table and len(table):
            counts.append(int(table[column].min()))
    return min(counts, default=0)


def the_papers_curves(tables: dict[str, pd.DataFrame], methods: list[str] | None
                      ) -> tuple[dict[str, pd.DataFrame], dict[str, list[str]]]:
    """The figure tables cut to the curves of the paper's own `methods` (the claims file's), and by figure the
    methods left out: a curve we add to a figure (FedProx in FedPAGE's Fig. 2(a)) never enters a claim of the
    paper, whose checks compare what the paper compared. Every check reads the cut tables, an implementation check
    too (it states what the paper's runs do); `methods` None (a claims file of a variant study) cuts nothing."""
    if methods is None:
        return tables, {}
    cut, others = {}, {}
    for name, table in tables.items():
        keep = table["method"].isin(methods) if "method" in table else pd.Series(True, index=table.index)
        cut[name] = table if keep.all() else table[keep].reset_index(drop=True)
        if not keep.all():
            others[name] = sorted(table.loc[~keep, "method"].astype(str).unique())
    return cut, others


def first_look(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a figure table at the first look: each curve's FIRST_LOOK_SEEDS smallest seeds, its own run's
    (the seed plan's runs add seeds after them: claims/seed_plan.py); a table without added seeds is itself."""
    if FIRST_LOOK_SEEDS not in table:
        return table
    rank = table.groupby("run_id")["seed"].rank(method="dense")
    return table[rank <= table[FIRST_LOOK_SEEDS]].reset_index(drop=True)


def equivalence_margin(claim: dict[str, Any]) -> float:
    """The equivalence margin a claim declares (checks.EQUIVALENCE); nan for a claim that tests no equivalence."""
    name = EQUIVALENCE.get(claim["check"])
    return float(claim[name]) if name and claim.get(name) is not None else math.nan


def implementation_failures(ledger: pd.DataFrame) -> list[str]:
    """The implementation checks (kind implementation) that FAIL, each with what it measured: a FAIL there is a
    fault of our implementation, not a finding about the paper, and stops the ledger (write_ledger)."""
    failed = ledger[(ledger["kind"] == IMPLEMENTATION) & (ledger["status"] == FAIL)]
    return [f"{row.claim_id}" + (f" ({row.quote})" if row.quote else "") + f": {row.measured}"
            for row in failed.itertuples()]


def _in_paper_terms(tables: dict[str, pd.DataFrame], labels: dict[str, list[str]],
                    ) -> tuple[dict[str, pd.DataFrame], dict[str, list[str]]]:
    """Figure tables and their label columns, by figure, as claims read them: in the paper's terms
    (results.tables.in_paper_terms), once per table."""
    tables, labels = dict(tables), dict(labels)
    for name in tables.keys() & labels.keys():
        tables[name], labels[name] = in_paper_terms(tables[name], labels[name])
    return tables, labels


class Judge:
    """The checks of claims on one set of figure tables: a claim's verdict before the readings it rests on
    are weighed (status, ruling, Result, Support, the figures read). Claims that read the same figures share
    one ClaimData, whose summaries are computed once. A tested verdict is decided at `level` (checks.common.at_level;
    ALPHA, the checks' own, but for a look of the adaptive seed plan)."""

    def __init__(self, tables: dict[str, pd.DataFrame], labels: dict[str, list[str]], scale: str,
                 level: float = ALPHA):
        self.tables, self.labels, self.scale, self.level = tables, labels, scale, level
        self.merged: dict[tuple[str, ...], ClaimData] = {}

    def data(self, figures: list[str]) -> ClaimData:
        key = tuple(figures)
        if key not in self.merged:
            table = pd.concat([self.tables[f] for f in figures], ignore_index=True) if figures else pd.DataFrame()
            self.merged[key] = ClaimData(table, merged_labels(*(self.labels[f] for f in figures)))
        return self.merged[key]

    def __call__(self, claim: dict[str, Any]) -> Judged:
        figures = [f for f in claim.get("figures", []) if f in self.tables]
        params = claim_params(claim)
        missing = bool(claim.get("figures")) and not figures
        if missing:
            result = Result(INCONCLUSIVE, "", f"figures {claim['figures']} not produced at scale {self.scale}")
            support = bootstrap_rule.Support(0, UNITS[claim["check"]], reason="no data", kind="none")
        else:
            data = self.data(figures)
            result = CHECKS[claim["check"]](data, **params)
            support = bootstrap_rule.bootstrap(claim["check"], data, params, result, *figures)
            if support.kind == "test":  # the test's own p-values against the look's level; a bootstrap has none
                result = at_level(result, self.level)
        status, ruling, rule = bootstrap_rule.decide(result.status, support, claim.get("min_seeds", 1))
        alone = status
        if missing:
            rule = causes.SCALE
        if self.scale in claim.get("undecided_at", {}):  # measured and shown, but this scale cannot decide it
            ruling = (f"not decided at the {self.scale} scale (the check alone says {status}): "
                      f"{claim['undecided_at'][self.scale]}")
            status, rule = INCONCLUSIVE, causes.SCALE
        return Judged(status, ruling, result, support, figures, rule, alone)


class Judged(NamedTuple):
    """A claim's verdict before the readings it rests on are weighed: its status and the rule's note on it
    (ruling), the check's Result, its Support, the figures read, and `rule`, the cause the judge itself gave
    an open verdict (causes.SCALE: undecided at this scale or no figure here; SEEDS or CHECK from the rule,
    support.decide; "" otherwise), and `alone`, the check's verdict before undecided_at."""
    status: str
    ruling: str
    result: Result
    support: bootstrap_rule.Support
    figures: list[str]
    rule: str
    alone: str  # the check's verdict under the rule, before undecided_at (then `status` is INCONCLUSIVE)


def robustness(claim: dict[str, Any], status: str, readings: dict[str, dict[str, Any]],
               alternatives: Alternatives | None, under: dict[tuple[str, str], Judge], judge: Judge
               ) -> list[Alternative]:
    """The claim's verdict (`status`, before an assumed reading makes it INCONCLUSIVE) under each alternative of
    the readings it rests on, each laid over the primary readings alone (claims/robustness.py: the category and
    the text follow from these): judged, or why not. An alternative that declares `check` (a reading of the
    check, not of the runs) judges the primary tables again with those parameters laid over the claim's, where
    its check takes them: it needs no run, so it is judged under `readings: primary` too (`alternatives` None),
    where the alternatives that change runs are not evaluated. An alternative whose runs have fewer seeds than the
    rule decides on (the paper's single seed, `seeds=paper`) tests nothing: untested, its verdict not compared."""
    found: list[Alternative] = []
    for reading in _rests(claim, readings):
        for name, declared in (readings[reading].get("alternatives") or {}).items():
            if "check" in declared:
                takes = set().union(*check_parameters(claim["check"]))  # required and optional
                taken = {k: v for k, v in declared["check"].items() if k in takes}
                if taken and any(claim.get(k) != v for k, v in taken.items()):
                    verdict = judge({**claim, **taken}).status
                    found.append(Alternative(reading, name, verdict, verdict != status))
                else:
                    found.append(Alternative(reading, name, untested="no_check_change"))
                continue
            if "set" not in declared or alternatives is None:
                found.append(Alternative(reading, name, untested="not_run" if "set" not in declared else NOT_EVALUATED))
                continue
            alt_tables = alternatives.get(reading, {}).get(name, ({}, {}))[0]
            if (reading, name) in under and set(alt_tables) & set(claim.get("figures", [])):
                judged = under[(reading, name)](claim)
                if bootstrap_rule.too_few_units(judged.support, claim.get("min_seeds", 1)):
                    found.append(Alternative(reading, name, untested=TOO_FEW_SEEDS))  # it can show no verdict
                else:
                    found.append(Alternative(reading, name, judged.status, judged.status != status))
            else:
                found.append(Alternative(reading, name, untested="no_run_changed" if name in alternatives.get(reading, {})
                                         else "not_run"))
    return found


def _rests(claim: dict[str, Any], readings: dict[str, dict[str, Any]]) -> list[str]:
    """The readings a claim rests on that the paper declares."""
    return [r for r in claim.get("rests_on", []) if r in readings]


def assumed(claim: dict[str, Any], readings: dict[str, dict[str, Any]]) -> list[str]:
    """The readings a claim rests on whose source is our assumption: a verdict on them tests our definition."""
    return [name for name in _rests(claim, readings) if readings[name]["source"] == "assumption"]


def rests_on_readings(claim: dict[str, Any], readings: dict[str, dict[str, Any]], status: str,
                      ruling: str) -> tuple[str, str]:
    """(status, ruling) once the readings the claim rests on are weighed: a verdict that rests on a definition
    of ours (a reading whose source is `assumption`) tests that definition, not the paper, so it is
    INCONCLUSIVE, the check's own verdict kept in the note; the other readings are named there."""
    unknown = [name for name in claim.get("rests_on", []) if name not in readings]
    if unknown:
        raise ConfigError(f"claim {claim['id']}: rests on readings {unknown} that the paper does not declare "
                          f"(declared: {', '.join(sorted(readings)) or 'none'})")
    ours = [f"{readings[name]['what']} (reading {name})" for name in assumed(claim, readings)]
    if ours and status != INCONCLUSIVE:
        ruling = " ".join(x for x in (ruling, f"rests on an assumed definition of {'; '.join(ours)}: "
                                               f"the check alone says {status}.") if x)
        status = INCONCLUSIVE
    named = [f"{name} ({readings[name]['source']})" for name in claim.get("rests_on", [])
             if readings[name]["source"] != "assumption"]
    if named:
        ruling = " ".join(x for x in (ruling, f"Rests on readings: {', '.join(named)}.") if x)
    return status, ruling


def on_stand_ins(labels: list[str], alone: str, status: str, ruling: str) -> tuple[str, str]:
    """(status, ruling) of a paper claim judged on the stand-ins `labels`: INCONCLUSIVE, for a stand-in shows the
    mechanism on synthetic data, never the paper's claim on its data; what the check gave there (`alone`) is
    kept as information."""
    if not labels:
        return status, ruling
    gave = {PASS: "holds", FAIL: "fails"}.get(alone, "stays open")
    return INCONCLUSIVE, " ".join(x for x in (ruling, f"Needs the real dataset: judged on {'; '.join(labels)}, "
                                                      f"where it {gave} (the check alone says {alone}).") if x)


def departs(claim: dict[str, Any], scale: str) -> str:
    """Where the claim's check departs from the paper's sentence at `scale`: its declared `departs` there (a reduced
    target or setting) and the words of the quote it does not test (`not_tested`)."""
    parts = [f"at {scale}: {claim['departs'][scale]}" if scale in claim.get("departs", {}) else "",
             f"not tested: {claim['not_tested']}" if claim.get("not_tested") else ""]
    return "; ".join(p for p in parts if p)


def _rounded(value: float, digits: int) -> float:
    """`digits` significant digits: a ledger a reviewer reads, and the same text on every platform."""
    return float(f"{value:.{digits}g}") if math.isfinite(value) else value


def ledger_readings(ledger: Path) -> str:
    """The config `readings` a claims ledger was computed with (the audit recomputes it so): "primary" where an
    alternative in its `alternatives` field was not evaluated for want of its runs (robustness.NOT_EVALUATED), or
    where there is no ledger with that field, else "all"."""
    try:
        column = pd.read_csv(ledger, usecols=["alternatives"], dtype=str, keep_default_na=False)["alternatives"]
    except (OSError, ValueError):  # no ledger, or one from before the field
        return "primary"
    return "primary" if any(a.untested == NOT_EVALUATED for cell in column for a in decode(cell)) else "all"


def ledger_look(record: Path) -> Look:
    """The seed plan's look a ledger was computed at, from its JSON record (Look.record; the audit recomputes it so):
    fixed, one look, where the record names none or there is no record."""
    try:
        named = json.loads(record.read_text()).get("seed_plan")
    except (OSError, ValueError):
        return Look()
    if not named:
        return Look()
    return Look(named["mode"], named["look"], tuple(named.get("planned", ())), named.get("plan_sha256", ""),
                named.get("max_seeds", 0))


def bootstrap_record(paper: str, scale: str) -> dict[str, Any]:
    """What a reader needs to redo the bootstrap of a ledger (results/claims/<paper>.json)."""
    return {
        "paper": paper, "scale": scale,
        "bootstrap": {"resamples": bootstrap_rule.RESAMPLES, "seed": bootstrap_rule.SEED,
                      "stream": "fedrepro.seeding.numpy_rng('claims-bootstrap', seed, *figures of the claim)",
                      "resampled": "the column seed (training seeds; Monte Carlo runs for engine monte_carlo), "
                                   "drawn with replacement, the same draw for every run of the claim"},
        "rule": {"alpha": ALPHA, "tested": sorted(TESTED), "tested_on_runs": bootstrap_rule.TESTS_RUNS,
                 "decide": bootstrap_rule.DECIDE,
                 "min_units": bootstrap_rule.MIN_UNITS,
                 "equivalence": dict(sorted(EQUIVALENCE.items())),
                 "text": "a tested check (checks.TESTED) decides by its own one-sided tests at alpha, combined over "
                         "its comparisons (intersection-union for PASS, Simes for FAIL; docs/claims_reference.md), an "
                         "equivalence check (checks.EQUIVALENCE: check -> its margin's parameter) by the two "
                         "one-sided tests of its margin (TOST); any other "
                         "verdict stands when >= decide of the bootstrap resamples agree with it; with fewer than "
                         "max(min_units, the claim's min_seeds) units, or less agreement, it is INCONCLUSIVE"},
    }


def load_claims(path: Path, figures: FigureLabels | None = None,
                readings: dict[str, Any] | None = None) -> dict[str, Any]:
    """A claims file, checked by validate_claims (with `figures`, down to the columns and values its
    claims name; with `readings`, the readings they rest on)."""
    claims_cfg = read_yaml(path)
    validate_claims(claims_cfg, str(path), figures, readings)
    return claims_cfg


def write_ledger(claims_path: Path, table_paths: list[Path], figures: dict[str, dict[str, Any]], scale: str,
                 out: Path, record: Path | None = None, scale_note: str = "",
                 readings: dict[str, dict[str, Any]] | None = None,
                 alternatives: dict[str, dict[str, dict[str, dict[str, Any]]]] | None = None,
                 seeds: dict[str, Any] | None = None, look: Look = Look()) -> pd.DataFrame:
    """The ledger of one paper: its claims file, its figure tables and what the ledger reads of their
    figures (by name, Figure.claims_settings: their label columns); `record` gets the
    bootstrap's settings (bootstrap_record) and `scale_note`, how this scale departs from the paper's
    (Figure.scale_note of the paper's figures); `readings`, the paper's; `alternatives`, the figures of each
    alternative reading as run (RunTable.alternatives_settings: each one's table path and labels;
    None: not evaluated; evaluate_claims); `seeds`, the seeds judged and those the tunings its runs take were chosen
    on (RunTable.seeds_record), for the record; `look`, the seed plan's look and at the second its planned
    claims (evaluate_claims; the record names the look under adaptive). Written atomically, after every check has
    run: a failure leaves the files as they were. The record holds the ledger's sha256 and its rows' digests
    (claims/seal.py), which every reader of the ledger checks."""
    claims_cfg = load_claims(claims_path, readings=readings)
    tables = {p.stem: read_figure_table(p) for p in table_paths}
    labels = {name: f["labels"] for name, f in figures.items()}
    alt = None if alternatives is None else {
        reading: {name: ({f: read_figure_table(Path(s["table"])) for f, s in figs.items()},
                         {f: s["labels"] for f, s in figs.items()})
                  for name, figs in alts.items()}
        for reading, alts in alternatives.items()}
    ledger = with_data_notes(evaluate_claims(claims_cfg, tables, scale, labels, readings, alt, look), tables)
    failed = implementation_failures(ledger)
    if failed:
        raise ResultsError(f"{claims_path}: {len(failed)} implementation check(s) FAIL at scale {scale}, so the "
                           f"implementation breaks what it states by construction; the ledger is not written until "
                           f"it is fixed:\n" + "\n".join(f"  - {f}" for f in failed))
    with atomic_path(out, suffix=".csv") as tmp:
        ledger.to_csv(tmp, index=False)
    if record is not None:  # with the ledger's sha256, which every reader checks (claims/seal.py)
        with atomic_path(record, suffix=".json") as tmp:
            body = bootstrap_record(claims_cfg.get("paper", out.stem), scale) | {
                "scale_note": scale_note, "seeds": seeds or {}, "seed_test": claims_cfg.get("seed_test", "t")
            } | look.record()
            tmp.write_text(json.dumps(body | ledger_summary(ledger) | {"ledger": ledger_seal(out)}, indent=2) + "\n")
    return ledger


def ledger_summary(ledger: pd.DataFrame) -> dict[str, Any]:
    """What the ledger's JSON record says of its rows: the verdict counts by kind (the paper's claims alone make
    the paper's count) and each claim's structured fields, the alternatives as lists."""
    counts = {kind: dict(sorted(verdict_counts(ledger, kind).items())) for kind in (PAPER_KIND, DERIVED, IMPLEMENTATION)}
    claims = [{key: ("" if pd.isna(row[key]) else row[key]) for key in RECORDED}
              | {"alternatives": [a.__dict__ for a in decode(row["alternatives"])]} for _, row in ledger.iterrows()]
    return {"counts": counts | {"text": counts_text(ledger)}, "claims": claims}
