"""A reviewer's audit of the results on disk (`fedrepro audit`, rule `audit`).

For every figure of a paper, the runs behind it (the run table), and for each run whether what is on disk
is what the run recorded when it was written: run.json complete and consistent with its run_id, metrics.csv
with the sha256 that run.json recorded, the data files with the sha256 the run read. Then what differs from
this checkout: the code commit and dirty flag, the package versions of requirements.lock, DVC's record of
each file. Each figure table must be what its runs give, and each claim's verdict is listed. `rerun`
recomputes runs into a temporary directory and compares their metrics.csv byte for byte.

Each finding has a status:
  FAIL     what is on disk contradicts a record (a hash differs, run.json is broken): `fedrepro audit` exits 1
  UNVERIFIED  a run drawn for a rerun that cannot be recomputed and compared here (its run.json is not sound or
           has no hash of its own content, it ran on a device this machine lacks, its inputs are missing): the
           check asked for was not made; `fedrepro audit` exits 3 unless something FAILs
  MISSING  a run or an output that was never produced: one that is gone while a file built from it is still
           there (a table, a drawing, a report page) is a FAIL (_built_from_gone), and so is a ledger deleted
           because rule claims failed, naming the failure
  WARN     a difference that contradicts no record (another commit or package version, a run trained by other
           code than this fedrepro's or before runs recorded it, data not here to check, a result DVC has not
           recorded yet)
  OK
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from fedrepro.errors import ResultsError
from fedrepro.failures import failure_text, read_failure
from fedrepro.experiments.runtable import Alternative, Figure, RunTable, run_id_of
from fedrepro.layout import Layout, figure_record
from fedrepro.experiments import provenance
from fedrepro.experiments.store import (METRICS_SHA256, RECORD_SHA256, RunFiles, canonical_json, read_record,
                                        resolves_outside, run_files, verify_metrics, verify_record)
from fedrepro.results.tables import figure_table_csv, recorded_sha256
from fedrepro.training_code import BEFORE_CODE_HASH, OTHER_CODE, code_change, code_sha256
from fedrepro.utils.digest import file_sha256, tree_sha256
from fedrepro.verdicts import VERDICTS

OK, WARN, MISSING, UNVERIFIED, FAIL = "OK", "WARN", "MISSING", "UNVERIFIED", "FAIL"
_RANK = {OK: 0, WARN: 1, MISSING: 2, UNVERIFIED: 3, FAIL: 4}  # as `fedrepro audit` exits: MISSING alone exits 0
RECORD_KEYS = ("run_id", "spec", "git", "packages", "device", "seeds", "data_files", "started", "ended",
               "wall_seconds", "diverged", "summary", METRICS_SHA256)  # and RECORD_SHA256 since it exists
# Fields a run.json holds only since after its own hash (record_sha256, 2026-11-25): a record with one of them and no
# hash had the hash removed, not a record from before it
LATER_THAN_THE_HASH = ("platform", "numerics", "resumed", "code_sha256")
# Files that cannot change a result: DVC's records and settings, ignore lists, the documentation.
NOT_CODE = (".dvc", ".md", ".gitignore", ".dvcignore")
RECOVER = "rerun it (delete {run_dir}/ and run snakemake again) or restore the recorded version with " \
          "`dvc checkout --force {run_dir}`"


@dataclass(frozen=True)
class Finding:
    check: str  # what was checked: run.json, resumed, metrics.csv, data, code, DVC, rerun, table, files, claims, ...
    status: str
    detail: str


def worst(findings: list[Finding]) -> str:
    return max((f.status for f in findings), key=_RANK.__getitem__, default=OK)


def status_of(findings: list[Finding], check: str) -> str:
    """The worst status of one check, "-" when it was not made."""
    mine = [f for f in findings if f.check == check]
    return worst(mine) if mine else "-"


# --- what runs are compared with: this checkout -----------------------------------------------------------


@dataclass
class DvcRecord:
    """DVC's view of the workspace (`dvc data status --granular`): repo-relative file -> change, or a note
    saying why there is none (not a DVC repository, nothing recorded, dvc failed)."""

    note: str | None
    changes: dict[str, str] = field(default_factory=dict)

    def finding(self, paths: list[str]) -> Finding | None:
        if self.note:
            return None  # said once per paper, not per run
        states = {p: self.changes.get(p, "not recorded") for p in paths}
        changed = {p: s for p, s in states.items() if s in ("modified", "deleted")}
        if changed:
            outputs = " ".join(sorted({self.output_of(p) for p in changed}))
            return Finding("DVC", FAIL, "; ".join(f"{p}: {s} since DVC recorded it" for p, s in changed.items())
                           + f" (`dvc data status --granular`; `dvc checkout --force {outputs}` restores the recorded "
                             "version, `make record` records this one)")
        pending = {p: s for p, s in states.items() if s != "unchanged"}
        if pending:
            return Finding("DVC", WARN, "; ".join(f"{p}: {s}" for p, s in pending.items())
                           + " (`make record` records it, then commit the .dvc files)")
        return Finding("DVC", OK, "as DVC recorded")

    def output_of(self, path: str) -> str:
        """The DVC-tracked directory (e.g. results) that holds `path`; `path` itself if none does."""
        holders = [d for d in self.changes if d.endswith("/") and path.startswith(d)]
        return max(holders, key=len).rstrip("/") if holders else path


def dvc_record(root: Path) -> DvcRecord:
    try:
        from dvc.exceptions import NotDvcRepoError
        from dvc.repo import Repo
    except ImportError:
        return DvcRecord("dvc is not installed: no DVC record to compare with")
    try:
        with Repo(str(root)) as repo:
            status = repo.data_status(granular=True)
    except NotDvcRepoError:
        return DvcRecord(f"not a DVC repository ({root.absolute()}/.dvc does not exist): nothing recorded to "
                         f"compare with")
    except Exception as exc:  # a DVC failure must not hide the rest of the audit
        return DvcRecord(f"`dvc data status` failed: {exc}")
    changes = {path: "unchanged" for path in status.get("unchanged", [])}
    for kind, paths in status.get("committed", {}).items():  # .dvc files changed since the last git commit
        changes.update({_path(p): f"recorded, .dvc file not committed ({kind})" for p in paths})
    for kind, paths in status.get("uncommitted", {}).items():  # workspace vs .dvc files
        changes.update({_path(p): {"added": "not recorded yet"}.get(kind, kind) for p in paths})
    if not changes:
        return DvcRecord("nothing is recorded with DVC yet (`make record` records data, results and figures)")
    return DvcRecord(None, changes)


def _path(entry: str | dict[str, str]) -> str:
    return entry["new"] if isinstance(entry, dict) else entry  # a rename is {"old": ..., "new": ...}


def locked_versions(lock: Path) -> dict[str, str] | None:
    """requirements.lock as {normalized name: version}; None when there is none."""
    if not lock.is_file():
        return None
    versions = {}
    for line in lock.read_text().splitlines():
        match = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*==\s*([^\s;#]+)", line)
        if match:
            versions[_normalize(match[1])] = match[2]
    return versions


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Checkout:
    """This checkout (`root`, e.g. Path(".")): its code state, lock file, DVC record and data files (hashed once
    each)."""

    root: Path
    git: dict[str, Any]
    lock: dict[str, str] | None
    dvc: DvcRecord
    _hashes: dict[Path, str] = field(default_factory=dict)
    _changes: dict[str, list[str] | None] = field(default_factory=dict)

    @classmethod
    def of(cls, root: Path) -> Checkout:
        return cls(root, provenance.git_state(root), locked_versions(root / "requirements.lock"), dvc_record(root))

    def sha256(self, path: Path) -> str:
        if path not in self._hashes:
            self._hashes[path] = tree_sha256(path)  # a file, or a prepared multi-view folder
        return self._hashes[path]

    def code_changes(self, commit: str) -> list[str] | None:
        """Tracked files that differ between `commit` and this working tree (committed or not), DVC records and
        docs aside (NOT_CODE); None when git cannot compare them (no git, or a commit unknown here)."""
        if commit not in self._changes:
            try:
                out = subprocess.run(["git", "diff", "--name-only", commit], cwd=self.root, capture_output=True,
                                     text=True, check=True).stdout
                self._changes[commit] = [name for name in out.splitlines()
                                         if not (name.endswith(NOT_CODE) or name.startswith(".dvc/"))]
            except (subprocess.CalledProcessError, FileNotFoundError):
                self._changes[commit] = None
        return self._changes[commit]

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)


# --- one run ------------------------------------------------------------------------------------------------


@dataclass
class RunAudit:
    run_id: str
    curves: list[str]  # "<figure>: <panel> / <curve>"
    findings: list[Finding] = field(default_factory=list)
    record: dict[str, Any] | None = None

    @property
    def status(self) -> str:
        return worst(self.findings)

    def status_of(self, check: str) -> str:
        return status_of(self.findings, check)


def audit_run(run: RunAudit, files: RunFiles, checkout: Checkout) -> None:
    """Fill run.findings (and run.record when run.json can be read)."""
    add = run.findings.append
    escape = files.escape()
    if escape:  # its files are not the pipeline's, wherever the link leads
        add(Finding("run.json", FAIL, f"{escape}: the pipeline's runs lie inside it; remove the link and "
                                      f"rerun the run (snakemake)"))
    if not files.record.is_file():
        state = "not finished" if files.run_dir.is_dir() else "never trained"
        add(Finding("run.json", MISSING, f"{state}: {checkout.relative(files.record)} does not exist"))
        return
    try:
        record = read_record(files.record)
    except ResultsError as exc:
        add(Finding("run.json", FAIL, str(exc)))
        return
    run.record = record
    dvc = checkout.dvc.finding([checkout.relative(files.metrics), checkout.relative(files.record)])
    try:
        add(_record_finding(run.run_id, record, files, checkout))
        run.findings += _resume_findings(record)
        add(_metrics_finding(record, files, checkout))
        run.findings += _data_findings(record, checkout)
        add(_code_finding(record, checkout))
        add(_code_hash_finding(record))
        add(_packages_finding(record, checkout))
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # a value of the wrong shape
        add(Finding("run.json", FAIL, f"{checkout.relative(files.record)} is malformed ({exc!r}); "
                                      + RECOVER.format(run_dir=checkout.relative(files.run_dir))))
    if dvc:
        add(dvc)


def _record_finding(run_id: str, record: dict[str, Any], files: RunFiles, checkout: Checkout) -> Finding:
    lacking = [k for k in RECORD_KEYS if k not in record and k != METRICS_SHA256]  # that one: metrics.csv's check
    problems = [f"lacks {', '.join(lacking)}"] if lacking else []
    if record.get("run_id") != run_id:
        problems.append(f"names run {record.get('run_id')!r}")
    # under the numerics version that made the run (0 in records that predate versions)
    hashed = run_id_of(record["spec"], record.get("numerics", 0)) if isinstance(record.get("spec"), dict) else run_id
    if hashed != run_id:
        problems.append(f"its spec hashes to {hashed}, not to its run_id (edited after the run)")
    if problems:
        return Finding("run.json", FAIL, f"{checkout.relative(files.record)}: " + "; ".join(problems) + "; "
                       + RECOVER.format(run_dir=checkout.relative(files.run_dir)))
    try:
        content = verify_record(files, record)
    except ResultsError as exc:  # its summary, divergence or traces edited after the run
        return Finding("run.json", FAIL, str(exc))
    ran = f"{record['ended'][:19]}, {record['wall_seconds']} s on {record['device'].get('device')}"
    later = [k for k in LATER_THAN_THE_HASH if k in record]
    if content is None and later:
        return Finding("run.json", FAIL, f"{checkout.relative(files.record)} has no hash of its own content "
                                         f"({RECORD_SHA256}) yet records {', '.join(later)}, which runs recorded only "
                                         f"after that hash: the hash was removed; "
                                         + RECOVER.format(run_dir=checkout.relative(files.run_dir)))
    if content is None:
        return Finding("run.json", WARN, f"{checkout.relative(files.record)} predates the hash of its own content, "
                                         f"so its summary (per-seed facts, divergence) cannot be verified; rerun it to "
                                         f"cover it; {ran}")
    return Finding("run.json", OK, f"complete; spec hashes to its run_id; its content hashes as recorded; {ran}")


def _resume_findings(record: dict[str, Any]) -> list[Finding]:
    """A WARN naming the checkpoints the run resumed from (engines/context.py RunContext.resumed): a checkpoint's
    payload_sha256 shows that it was not damaged, not that this run saved it; a rerun trains from round 0."""
    resumed = record.get("resumed") or []
    where = "; ".join(f"{r['checkpoint']} at seed group {r['group']}, "
                      + (f"round {r['round']}" if r["round"] is not None else "trained") + f" (payload sha256 "
                      f"{r['payload_sha256']})" for r in resumed)
    return [Finding("resumed", WARN, f"resumed from {where}: a checkpoint's hash shows it was not damaged, not that "
                                      f"this run saved it; a rerun (`fedrepro audit --rerun`) trains it from round 0 "
                                      f"and compares")] if resumed else []


def _metrics_finding(record: dict[str, Any], files: RunFiles, checkout: Checkout) -> Finding:
    if not files.metrics.is_file():
        return Finding("metrics.csv", FAIL, f"{checkout.relative(files.metrics)} does not exist, though run.json "
                       f"records it; " + RECOVER.format(run_dir=checkout.relative(files.run_dir)))
    try:
        digest = verify_metrics(files, record)
    except ResultsError as exc:
        return Finding("metrics.csv", FAIL, str(exc))
    return Finding("metrics.csv", OK, f"sha256 {digest} as recorded")


def _data_findings(record: dict[str, Any], checkout: Checkout) -> list[Finding]:
    findings = []
    for entry in record.get("data_files", []):
        # a downloaded file under data/raw/<dataset>/; generated stand-in data by its own path (a file or folder)
        path = checkout.root / (entry.get("path") or Path("data") / "raw" / entry["dataset"] / entry["name"])
        origin = f"{entry.get('source')}, verified by {entry.get('verified_by')}"
        if not path.exists():
            findings.append(Finding("data", WARN, f"{checkout.relative(path)} ({origin}): not here to check "
                                                  f"(recorded sha256 {entry['sha256']})"))
        elif checkout.sha256(path) != entry["sha256"]:
            findings.append(Finding("data", FAIL, f"{checkout.relative(path)}: sha256 {checkout.sha256(path)}, "
                                                  f"but the run read sha256 {entry['sha256']} ({origin})"))
        else:
            findings.append(Finding("data", OK, f"{checkout.relative(path)} ({origin}): sha256 as recorded"))
    return findings


def _code_finding(record: dict[str, Any], checkout: Checkout) -> Finding:
    ran, now = record.get("git") or {}, checkout.git
    if not ran.get("commit"):
        return Finding("code", WARN, "the run recorded no commit (not run from a git checkout)")
    commit, here = ran["commit"][:12], str(now.get("commit"))[:12]
    notes = []
    if ran.get("dirty"):
        notes.append(f"run with uncommitted changes on top of {commit}: its code is not in git")
    changes = checkout.code_changes(ran["commit"])
    if changes is None:
        notes.append(f"run at commit {commit}, which git cannot compare with this checkout ({here})")
    elif changes:
        shown = ", ".join(changes[:5]) + (f" and {len(changes) - 5} more" if len(changes) > 5 else "")
        notes.append(f"run at commit {commit}; {len(changes)} code file(s) differ in this checkout ({here}): {shown}")
    if notes:
        return Finding("code", WARN, "; ".join(notes))
    return Finding("code", OK, f"run at commit {commit}, clean; this checkout ({here}) has the same code"
                   + ("" if ran["commit"] == now.get("commit") else " (it differs only in DVC records and docs)"))


def _code_hash_finding(record: dict[str, Any]) -> Finding:
    """The run's recorded code_sha256 against this fedrepro's sources of its engine (training_code.py): a run id
    does not key the code, so a run trained before a change that its numerics version missed stays under its id."""
    engine, recorded = record["spec"]["engine"], record.get("code_sha256")
    now = code_sha256(engine)
    change = code_change(record, engine)
    if change == BEFORE_CODE_HASH:
        return Finding("code hash", WARN, f"{change} (code_sha256; the {engine} sources hash to {now[:12]} here): "
                                          f"which code trained it is not recorded")
    if change == OTHER_CODE:
        return Finding("code hash", WARN, f"{change}: code_sha256 {recorded[:12]}, but the sources that decide "
                                          f"{engine}'s floats hash to {now[:12]} here, under the same numerics "
                                          f"version (`fedrepro stale-runs` lists it to retrain)")
    return Finding("code hash", OK, f"trained by this code ({engine} sources: code_sha256 {now[:12]})")


def _packages_finding(record: dict[str, Any], checkout: Checkout) -> Finding:
    if checkout.lock is None:
        return Finding("packages", WARN, "no requirements.lock to compare with")
    from packaging.version import InvalidVersion, Version

    def same(ran: str, locked: str) -> bool:
        try:  # 2.13.0+cpu is the lock's 2.13.0 built for one platform
            return Version(ran).public == Version(locked).public
        except InvalidVersion:
            return ran == locked

    versions = {name: v for name, v in record["packages"].items() if _normalize(name) in checkout.lock}
    differ = {n: v for n, v in versions.items() if v is None or not same(v, checkout.lock[_normalize(n)])}
    if differ:
        return Finding("packages", WARN, "; ".join(f"{n} {v} (requirements.lock: {checkout.lock[_normalize(n)]})"
                                                   for n, v in sorted(differ.items())))
    return Finding("packages", OK, ", ".join(f"{n} {v}" for n, v in sorted(versions.items()))
                   + " as requirements.lock")


# --- one paper ----------------------------------------------------------------------------------------------


@dataclass
class FigureAudit:
    name: str
    title: str
    run_ids: list[str]
    findings: list[Finding] = field(default_factory=list)


@dataclass
class PaperAudit:
    paper: str
    scale: str
    scale_from: str  # where the scale came from
    figures: list[FigureAudit]
    runs: dict[str, RunAudit]
    findings: list[Finding]  # paper-level: DVC, claims ledger
    claims: pd.DataFrame | None

    @property
    def all_findings(self) -> list[Finding]:
        return (self.findings + [f for fig in self.figures for f in fig.findings]
                + [f for run in self.runs.values() for f in run.findings])


# writes a paper's ledger (CSV) and its record (JSON) at the two paths given, as rule claims does (cli.ledger_rebuilder:
# results never import claims)
LedgerBuilder = Callable[[Path, Path], None]
LedgerSeal = Callable[[Path], None]  # raises ResultsError unless the ledger is the file its record seals


def audit_paper(paper: str, figures: list[Figure], scale: str, scale_from: str, checkout: Checkout,
                alternatives: Sequence[Alternative] = (), rebuild_ledger: LedgerBuilder | None = None,
                verify_ledger: LedgerSeal | None = None) -> PaperAudit:
    """The audit of a paper's figures and, when they were run (config readings: all), of the tables of its
    alternative readings, which the claims ledger reads as well; with `verify_ledger` (claims/seal.py), of the
    ledger against its own seal first; with `rebuild_ledger`, of the ledger and its record, rebuilt from the figure
    tables once they are verified and compared with the ones on disk."""
    out = Layout(scale, checkout.root)
    under = [(f"{figure.name} under {a.reading}={a.name}", figure,
              out.reading_table(paper, a.reading, a.name, figure.name))
             for a in alternatives for figure in a.figures.values()]
    runs: dict[str, RunAudit] = {}
    for name, figure in [(f.name, f) for f in figures] + [(name, f) for name, f, _ in under]:
        for curve in figure.curves:
            for rid in figure.curve_runs(curve.run_id):  # its own run, then those the seed plan added to it
                runs.setdefault(rid, RunAudit(rid, [])).curves.append(f"{name}: {curve.panel} / {curve.label}")
    for run in runs.values():
        audit_run(run, run_files(out.results, run.run_id), checkout)
    audited = [_audit_figure(paper, figure, runs, checkout, out) for figure in figures]
    audited += [_audit_figure(paper, figure, runs, checkout, out, name, table) for name, figure, table in under]
    findings = [Finding("DVC", WARN, checkout.dvc.note)] if checkout.dvc.note else []
    claims, claims_finding = _claims(paper, out, checkout, verify_ledger)
    findings.append(claims_finding)
    ledger = out.ledger(paper)
    tables = [out.table(paper, f.name) for f in figures] + [table for _, _, table in under]
    gone = [checkout.relative(t) for t in tables if not t.is_file()]
    pages = [out.ledger(paper, "html"), *(out.figure(paper, f.name, "html") for f in figures)]  # show its rows
    stale = _built_from_gone("claims", [ledger], gone, paper, checkout)  # rule claims reads every figure table
    findings += stale + _built_from_gone("claims", pages, [] if ledger.is_file() else [checkout.relative(ledger)],
                                         paper, checkout)
    if ledger.is_file() and not stale and claims is not None and rebuild_ledger is not None:
        unverified = [f.name for f in audited if status_of(f.findings, "table") != OK]
        findings += (_ledger_findings(out, paper, checkout, rebuild_ledger) if not unverified else [
            Finding("claims", WARN, f"{checkout.relative(ledger)} not recomputed: the table(s) of "
                                    f"{', '.join(unverified)} are not verified")])
    drawn = [out.claims_figure(paper, ext) for ext in ("pdf", "png")]
    if ledger.is_file():  # rule claims writes the ledger first, then its figure: a job stopped between leaves both
        failed = read_failure(out.ledger_failure(paper))
        if failed:
            findings.append(Finding("claims", FAIL, f"{checkout.relative(ledger)} may be from an earlier job: rule "
                                                    f"claims {failure_text(failed)}; fix that and run snakemake"))
        absent = [checkout.relative(p) for p in drawn if not p.is_file()]
        if absent:
            findings.append(Finding("files", MISSING, f"{', '.join(absent)} not made"))
    if any(p.is_file() for p in drawn):
        findings += _drawn_findings([p for p in drawn if p.is_file()], checkout)
    dvc = checkout.dvc.finding([checkout.relative(ledger)]) if ledger.is_file() else None
    if dvc:
        findings.append(dvc)
    return PaperAudit(paper, scale, scale_from, audited, runs, findings, claims)


def _audit_figure(paper: str, figure: Figure, runs: dict[str, RunAudit], checkout: Checkout, out: Layout,
                  name: str = "", table: Path | None = None) -> FigureAudit:
    """A figure's table and drawings against its runs; with `table`, a table of an alternative reading (`name`),
    which has no drawing."""
    audit = FigureAudit(name or figure.name, figure.title, figure.run_ids)
    drawn = table is None  # a figure of the paper, not the table of an alternative reading
    outputs = [out.figure(paper, figure.name, ext) for ext in figure.formats] if drawn else []
    page = [out.figure(paper, figure.name, "html")] if drawn else []  # its report page (rule figure_page) ...
    shown = [out.figure(paper, figure.name, figure.kind.shown)] if drawn else []  # ... shows this file of it
    table = table or out.table(paper, figure.name)
    unverified = [rid for rid in figure.run_ids if runs[rid].status_of("metrics.csv") != OK
                  or runs[rid].status_of("run.json") not in (OK, WARN)]  # WARN: a record from before its hash
    gone = [rid for rid in figure.run_ids if runs[rid].status_of("run.json") == MISSING]
    audit.findings += _built_from_gone("runs", [table, *outputs, *page], [f"run(s) {', '.join(gone)}"] if gone else [],
                                       paper, checkout)
    audit.findings += _built_from_gone("files", outputs, [] if table.is_file() else [checkout.relative(table)], paper,
                                       checkout)
    audit.findings += _built_from_gone("files", page, [checkout.relative(p) for p in shown if not p.is_file()], paper,
                                       checkout)
    if not table.is_file():
        audit.findings.append(Finding("table", MISSING, f"{checkout.relative(table)} does not exist"))
    elif unverified:
        audit.findings.append(Finding("table", WARN, f"{checkout.relative(table)} not checked: run(s) "
                                                     f"{', '.join(unverified)} not verified"))
    else:
        try:
            expected = figure_table_csv(figure, out.results).encode("utf-8")
        except Exception as exc:  # the runs are verified; a table that cannot be rebuilt is itself a finding
            audit.findings.append(Finding("table", FAIL, f"{checkout.relative(table)} cannot be rebuilt from its "
                                                         f"runs: {exc}"))
        else:
            audit.findings.append(_table_finding(table, expected, checkout))
    for path, tree, check in [(table, out.results, "table")] + [(p, out.figures, "files") for p in outputs]:
        escape = resolves_outside(path, tree)
        if escape:
            audit.findings.append(Finding(check, FAIL, f"{escape}: remove the link and rerun snakemake"))
    absent = [checkout.relative(p) for p in outputs if not p.is_file()]
    if absent:
        audit.findings.append(Finding("files", MISSING, f"{', '.join(absent)} not made"))
    elif outputs:
        audit.findings += _drawn_findings(outputs, checkout)
    dvc = checkout.dvc.finding([checkout.relative(p) for p in [table, *outputs] if p.is_file()])
    if dvc:
        audit.findings.append(dvc)
    return audit


def _built_from_gone(check: str, built: list[Path], gone: list[str], paper: str, checkout: Checkout) -> list[Finding]:
    """A FAIL where a file built from `gone` (what is no longer on disk) is still there: a job stopped after
    Snakemake deleted its outputs to remake them (kill -9 included), or files deleted by hand, leave what was built
    from the old ones; MISSING is only for what nothing on disk was built from. [] when nothing is left."""
    left = [checkout.relative(p) for p in built if p.is_file()]
    if not (gone and left):
        return []
    return [Finding(check, FAIL, f"{', '.join(left)} built from {', '.join(gone)}, which are gone; `snakemake "
                                 f"{paper}` remakes them and what reads them")]


def _table_finding(table: Path, expected: bytes, checkout: Checkout) -> Finding:
    actual = table.read_bytes()
    if actual == expected:
        return Finding("table", OK, f"{checkout.relative(table)} is what its runs give")
    return Finding("table", FAIL, f"{checkout.relative(table)} differs from the table its runs give: sha256 "
                   f"{_sha256(actual)} on disk, {_sha256(expected)} from the runs (changed "
                   f"after aggregate, or the configuration changed since); rerun snakemake or restore the recorded "
                   f"version with `dvc checkout --force {checkout.relative(table)}`")


def _drawn_findings(files: list[Path], checkout: Checkout) -> list[Finding]:
    """A figure's files against the sha256 recorded when they were drawn (layout.figure_record): rendering is not
    byte-stable across machines, so a figure is compared with its own record, not redrawn."""
    findings = []
    for path in files:
        recorded, actual = recorded_sha256(path), file_sha256(path)
        where = checkout.relative(path)
        if recorded is None:
            findings.append(Finding("files", WARN, f"{where}: {checkout.relative(figure_record(path))} records no "
                                                   f"sha256 of it (drawn before figures were hashed), so it cannot be "
                                                   f"verified; delete it and run snakemake to redraw it"))
        elif actual != recorded:
            findings.append(Finding("files", FAIL, f"{where}: sha256 {actual}, but it had {recorded} when it was drawn "
                                                   f"({figure_record(path).name}): another file copied over it, or "
                                                   f"edited since; redraw it (delete it and run snakemake) or restore "
                                                   f"the recorded version with `dvc checkout --force {where}`"))
    if not findings:
        findings.append(Finding("files", OK, ", ".join(checkout.relative(p) for p in files) + ": as drawn"))
    return findings


LEDGER_KEY = "claim_id"


def _ledger_findings(out: Layout, paper: str, checkout: Checkout, rebuild: LedgerBuilder) -> list[Finding]:
    """The ledger and its record on disk against the ones their builder gives from the (verified) figure tables:
    each claim whose cells differ is a FAIL naming the claim, its verdict first."""
    ledger, record = out.ledger(paper), out.ledger(paper, "json")
    where = checkout.relative(ledger)
    fix = (f"(edited after rule claims, or the code or configuration changed since); rerun snakemake (`snakemake "
           f"{paper}`) or restore the recorded version with `dvc checkout --force {where}`")
    with tempfile.TemporaryDirectory(prefix=f"fedrepro-ledger-{paper}-") as tmp:
        again, again_record = Path(tmp) / ledger.name, Path(tmp) / record.name
        try:
            rebuild(again, again_record)
        except Exception as exc:  # the tables are verified: a ledger that cannot be rebuilt is itself a finding
            return [Finding("claims", FAIL, f"{where} cannot be recomputed from its figure tables: {exc}")]
        findings = []
        if again.read_bytes() != ledger.read_bytes():
            findings += _ledger_differences(ledger, again, where, fix)
        if not record.is_file():
            findings.append(Finding("claims", MISSING, f"{checkout.relative(record)} does not exist"))
        elif again_record.read_bytes() != record.read_bytes():
            findings.append(Finding("claims", FAIL, f"{checkout.relative(record)}: sha256 {file_sha256(record)}, but "
                                                    f"the record its ledger's builder gives has "
                                                    f"{file_sha256(again_record)} " + fix))
    return findings or [Finding("claims", OK, f"{where} and its record are what its figure tables give (recomputed)")]


def _ledger_differences(ledger: Path, again: Path, where: str, fix: str) -> list[Finding]:
    """How a ledger on disk differs from the one recomputed: one FAIL per claim that differs (its verdict named
    first), or one for the whole file when its columns or claims differ."""
    disk, given = (pd.read_csv(p, dtype=str, keep_default_na=False) for p in (ledger, again))
    if list(disk.columns) != list(given.columns) or list(disk[LEDGER_KEY]) != list(given[LEDGER_KEY]):
        return [Finding("claims", FAIL, f"{where} differs from the ledger its figure tables give in its columns or "
                                        f"claims: sha256 {file_sha256(ledger)} on disk, {file_sha256(again)} "
                                        f"recomputed " + fix)]
    findings = []
    for (_, a), (_, b) in zip(disk.iterrows(), given.iterrows()):
        cells = [c for c in disk.columns if a[c] != b[c]]
        if not cells:
            continue
        status = f" reads {a['status']}, but its figure tables give {b['status']}" if "status" in cells else ""
        others = [c for c in cells if c != "status"]
        detail = (f"{'; ' if status else ': '}{', '.join(others)} differ from the recomputed ledger's" if others
                  else "")
        findings.append(Finding("claims", FAIL, f"{where}: claim {a[LEDGER_KEY]}{status}{detail} " + fix))
    return findings or [Finding("claims", FAIL, f"{where} differs from the ledger its figure tables give in its "
                                                f"layout (same cells): sha256 {file_sha256(ledger)} on disk, "
                                                f"{file_sha256(again)} recomputed " + fix)]


def _counts(record: Path, ledger: pd.DataFrame) -> str:
    """The verdict counts the ledger's JSON record states (the paper's claims apart from the implementation checks,
    claims/kinds.py); the plain count of every row where the record does not say."""
    try:
        return json.loads(record.read_text())["counts"]["text"]
    except (OSError, ValueError, KeyError, TypeError):
        counts = ledger["status"].value_counts()
        return ", ".join(f"{counts.get(s, 0)} {s}" for s in VERDICTS) + " (all rows)"


def _claims(paper: str, out: Layout, checkout: Checkout,
            verify: LedgerSeal | None = None) -> tuple[pd.DataFrame | None, Finding]:
    path = out.ledger(paper)
    if not path.is_file():
        failed = read_failure(out.ledger_failure(paper))
        if failed:  # Snakemake deleted the ledger of the failed job: its cause is the finding
            return None, Finding("claims", FAIL, f"{checkout.relative(path)} does not exist: rule claims "
                                                 f"{failure_text(failed)}; fix that and run snakemake")
        return None, Finding("claims", MISSING, f"{checkout.relative(path)} does not exist")
    ledger = pd.read_csv(path, dtype=str, keep_default_na=False)
    lacking = sorted({"claim_id", "kind", "figure", "scale", "status", "cause", "alternatives", "support", "note"}
                     - set(ledger.columns))
    if lacking:
        return None, Finding("claims", FAIL, f"{checkout.relative(path)} is not a claims ledger: no column "
                                             f"{', '.join(lacking)}; rerun snakemake (rule claims)")
    try:  # its own seal first: an edited ledger is a FAIL whatever else could not be verified
        if verify is not None:
            verify(path)
    except ResultsError as exc:
        return ledger, Finding("claims", FAIL, str(exc))
    summary = _counts(out.ledger(paper, "json"), ledger)
    scales = set(ledger["scale"])
    if scales != {out.scale}:
        return ledger, Finding("claims", WARN, f"{checkout.relative(path)} was computed at scale "
                                               f"{', '.join(sorted(scales))}, not {out.scale}: {summary}")
    return ledger, Finding("claims", OK, f"{checkout.relative(path)}: {summary}")


# --- rerun --------------------------------------------------------------------------------------------------


def choose_reruns(audits: list[PaperAudit], k: int, seed: int) -> list[str]:
    """k runs drawn (seeded) from every run with a run.json on disk, over all audited papers, whatever its checks
    found: a run left out of the draw for a check it did not pass (a record without its own hash, a device this
    machine lacks) would be one a forger could hide behind. A run never trained has nothing to verify."""
    candidates = sorted({rid for a in audits for rid, run in a.runs.items() if run.status_of("run.json") != MISSING})
    return random.Random(seed).sample(candidates, min(k, len(candidates)))


def rerun(run: RunAudit, spec: dict[str, Any], checkout: Checkout, out: Layout) -> Finding:
    """Recompute a run in a temporary directory as rule train would and compare metrics.csv byte for byte; a run
    that cannot be recomputed and compared here is UNVERIFIED, saying why."""
    from fedrepro.experiments.execute import execute_run

    files = run_files(out.results, run.run_id)
    inputs = RunTable("", {run.run_id: spec}, {}).input_files(run.run_id)
    prepared = checkout.root / inputs["prepared"]
    data_records = [checkout.root / p for p in inputs["provenance"]]
    obstacles = _rerun_obstacles(run, files, [prepared, *data_records], checkout)
    if obstacles:
        return Finding("rerun", UNVERIFIED, f"not verified, cannot rerun it here: {'; '.join(obstacles)}")
    record = run.record  # read and sound: _rerun_obstacles says so otherwise
    with tempfile.TemporaryDirectory(prefix=f"fedrepro-rerun-{run.run_id}-") as tmp:
        again = RunFiles(Path(tmp) / run.run_id)
        redone = execute_run(run.run_id, spec, again, prepared, data_records, device=record["device"]["device"],
                             threads=record["device"].get("torch_threads", 1), log_path=Path(tmp) / "run.log",
                             repo=checkout.root)
        return compare_rerun(files, again, record, redone, checkout)


def _rerun_obstacles(run: RunAudit, files: RunFiles, inputs: list[Path], checkout: Checkout) -> list[str]:
    """Why a run cannot be recomputed and compared here, each with what would let it be; none when it can. A rerun
    is compared with the run's record, so a record that is not sound, or whose own content has no hash to vouch
    for it (its summary, platform and device could have been edited together with the metrics hash), stops it."""
    import torch

    where = checkout.relative(files.record)
    if run.record is None or run.status_of("run.json") == FAIL:
        return [f"{where} fails its check (its run.json finding says why), so there is no sound record to compare "
                f"a rerun with"]
    if RECORD_SHA256 not in run.record:
        return [f"{where} records no sha256 of its own content ({RECORD_SHA256}), so the record a rerun would be "
                f"compared with (its summary, platform, device) may have been edited; delete "
                f"{checkout.relative(files.run_dir)}/ and run snakemake to record it again"]
    obstacles = []
    absent = [checkout.relative(p) for p in inputs if not p.exists()]  # (a folder: multi-view)
    if absent:
        obstacles.append(f"{', '.join(absent)} missing (`snakemake {absent[0]}` makes it)")
    device = run.record["device"]["device"]
    if device.startswith("cuda") and not torch.cuda.is_available():
        obstacles.append(f"it ran on {device} and torch finds no CUDA device here: rerun it on a machine with CUDA "
                         f"(docs/audit.md, \"Reruns of GPU runs\")")
    elif device != "cpu" and not device.startswith("cuda"):
        obstacles.append(f"it ran on {device!r}, not a device fedrepro trains on (cpu, cuda)")
    return obstacles


# A rerun on another platform (CPU, math library, its code path) may round differently: equal within this
# relative tolerance (and 1e-12 absolute, for values near zero) it is explained by the platform, not tampering.
RERUN_RTOL = 1e-6


def compare_rerun(files: RunFiles, again: RunFiles, record: dict[str, Any], redone: dict[str, Any],
                  checkout: Checkout) -> Finding:
    """One of three outcomes: byte-identical (OK); equal within RERUN_RTOL where the recorded platform (for a GPU
    run also the card, driver, CUDA, cuDNN and float settings) differs from this one (WARN, naming the
    differences); else different (FAIL). What figures and verdicts read of
    run.json besides the metrics (the per-seed facts and divergence) is compared the same way."""
    recorded = files.metrics.read_bytes() if files.metrics.is_file() else b""
    keys = ("summary", "diverged")
    changed = [key for key in keys if canonical_json(redone.get(key)) != canonical_json(record.get(key))]
    if again.metrics.read_bytes() == recorded and not changed:
        return Finding("rerun", OK, f"rerun in {redone['wall_seconds']:.1f} s: metrics.csv byte-identical "
                                    f"(sha256 {redone[METRICS_SHA256]}), run.json's summary equal")
    differ = (provenance.platform_differences(record.get("platform"), provenance.platform_info())
              + provenance.device_differences(record.get("device"), redone["device"]))
    gap = _relative_gap(files.metrics, again.metrics) if recorded else None
    facts_close = all(_close(redone.get(key), record.get(key)) for key in keys)
    if differ and gap is not None and gap <= RERUN_RTOL and facts_close:
        return Finding("rerun", WARN, f"rerun numerically equal within relative tolerance {RERUN_RTOL:g}, not "
                                      f"byte-identical (largest relative difference {gap:.2g} in metrics.csv): the "
                                      f"platform differs ({'; '.join(differ)})")
    where = f"; the platform differs ({'; '.join(differ)})" if differ else "; same platform"
    if again.metrics.read_bytes() != recorded:
        size = f" (largest relative difference {gap:.2g}, tolerance {RERUN_RTOL:g})" if gap is not None else ""
        return Finding("rerun", FAIL, f"rerun differs: {checkout.relative(files.metrics)} has sha256 "
                       f"{_sha256(recorded)}, the rerun's metrics.csv {redone[METRICS_SHA256]}{size}{where}")
    return Finding("rerun", FAIL, f"rerun differs: {checkout.relative(files.record)}'s {' and '.join(changed)} "
                                  f"differ from the rerun's (metrics.csv identical){where}")


def _relative_gap(recorded: Path, rerun: Path) -> float | None:
    """The largest relative difference between two metrics files' numbers, beyond 1e-12 absolute (0: equal
    values); None when they differ in shape, columns, text or where values are missing."""
    try:
        a, b = pd.read_csv(recorded), pd.read_csv(rerun)
    except (OSError, ValueError):
        return None
    if list(a.columns) != list(b.columns) or a.shape != b.shape:
        return None
    numbers = a.select_dtypes("number").columns
    if list(numbers) != list(b.select_dtypes("number").columns) or not a.drop(columns=numbers).equals(
            b.drop(columns=numbers)):
        return None
    x, y = a[numbers].to_numpy(float), b[numbers].to_numpy(float)
    if not np.array_equal(np.isnan(x), np.isnan(y)) or not np.array_equal(np.isinf(x), np.isinf(y)):
        return None
    finite = np.isfinite(x) & (x != y)
    if not finite.any():
        return 0.0 if np.array_equal(x[np.isinf(x)], y[np.isinf(y)]) else None
    return float(np.max(_relative(x[finite], y[finite])))


def _relative(x: Any, y: Any) -> Any:
    """|x - y| relative to the larger magnitude; 0 within 1e-12 absolute (values near zero)."""
    gap = np.abs(np.asarray(x, dtype=float) - np.asarray(y, dtype=float))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(gap <= 1e-12, 0.0, gap / np.maximum(np.abs(x), np.abs(y)))


def _close(a: Any, b: Any) -> bool:
    """Two JSON values equal, floats within RERUN_RTOL (run.json's summary)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
        return numbers and (a == b or bool(_relative(a, b) <= RERUN_RTOL))
    return a == b


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
