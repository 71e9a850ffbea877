"""Tamper evidence (aggregate refuses a changed metrics.csv) and `fedrepro audit` on a real fedvr smoke result set."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import pytest

from fedrepro import numerics
from fedrepro.claims.table import write_ledger_html
from fedrepro.cli import main
from fedrepro.errors import ResultsError
from fedrepro.layout import Layout
from fedrepro.report_pages import Overview, write_figure_page
from fedrepro.experiments.runtable import run_id_of
from fedrepro.experiments.store import METRICS_SHA256, RECORD_SHA256, record_sha256
from fedrepro.results.audit import LATER_THAN_THE_HASH
from fedrepro.results.tables import table_digest, verify_figure_table, write_figure_table
from fedrepro.training_code import code_sha256
from fedrepro.validate import load_and_validate

PAPER = "fedvr"
REPO = Path(__file__).resolve().parents[2]


def audit(capsys, *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        main(["audit", PAPER, *args])
    captured = capsys.readouterr()
    return done.value.code, captured.out + captured.err


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def flip_last_digit(path: Path) -> None:
    """One byte changed: the file's last digit, so that it still parses as the same table."""
    data = bytearray(path.read_bytes())
    i = max(i for i, b in enumerate(data) if chr(b).isdigit())
    data[i] = ord("0") + (data[i] - ord("0") + 1) % 10
    path.write_bytes(bytes(data))


def run_dirs(root: Path) -> list[Path]:
    return sorted((root / "results" / "smoke" / "runs").iterdir())


def figure_of_run(root: Path, run_id: str):
    _, table = load_and_validate({"scale": "smoke"}, root / "config")
    return next(f for f in table.paper_figures(PAPER) if run_id in f.run_ids)


# --- tamper evidence in the pipeline --------------------------------------------------------------------------


def test_aggregate_refuses_a_metrics_file_changed_after_its_run(smoke_copy):
    run = run_dirs(smoke_copy)[0]
    recorded = json.loads((run / "run.json").read_text())[METRICS_SHA256]
    assert recorded == sha256(run / "metrics.csv")
    figure = figure_of_run(smoke_copy, run.name)
    table = smoke_copy / "results" / "smoke" / PAPER / f"{figure.name}.csv"
    before = table.read_bytes()
    flip_last_digit(run / "metrics.csv")
    with pytest.raises(ResultsError) as error:
        write_figure_table(figure, Path("results/smoke"), table)
    message = str(error.value)
    assert f"results/smoke/runs/{run.name}/metrics.csv was changed" in message
    assert recorded in message and sha256(run / "metrics.csv") in message
    assert f"dvc checkout --force results/smoke/runs/{run.name}/metrics.csv" in message and "\n" not in message
    assert table.read_bytes() == before  # the figure table is left as it was


def test_an_edited_fact_in_run_json_is_refused_by_aggregate_and_fails_the_audit(smoke_copy, capsys):
    """Figures and verdicts read run.json's per-seed facts (here: whether a seed diverged): its own hash covers them."""
    run = run_dirs(smoke_copy)[0]
    record = run / "run.json"
    edited = record.read_text().replace('"diverged_at": null', '"diverged_at": 0', 1)
    assert edited != record.read_text()
    record.write_text(edited)
    figure = figure_of_run(smoke_copy, run.name)
    table = smoke_copy / "results" / "smoke" / PAPER / f"{figure.name}.csv"
    before = table.read_bytes()
    with pytest.raises(ResultsError, match=f"results/smoke/runs/{run.name}/run.json was changed after its run wrote it"):
        write_figure_table(figure, Path("results/smoke"), table)
    assert table.read_bytes() == before
    code, out = audit(capsys)
    assert code == 1
    assert f"results/smoke/runs/{run.name}/run.json was changed after its run wrote it" in (
        smoke_copy / "audit" / "smoke" / "fedvr.md").read_text()


def test_an_edited_figure_table_is_refused_before_a_figure_or_a_verdict_reads_it(smoke_copy):
    """The probe: one digit of a figure table edited, with a fresh mtime, so that snakemake would redraw from it."""
    table = sorted((smoke_copy / "results" / "smoke" / PAPER).glob("*.csv"))[0]
    verify_figure_table(table)  # as aggregate wrote it
    flip_last_digit(table)
    with pytest.raises(ResultsError, match=f"results/smoke/{PAPER}/{table.name} was changed after aggregate wrote it"):
        verify_figure_table(Path("results/smoke") / PAPER / table.name)
    table_digest(table).unlink()
    with pytest.raises(ResultsError, match=r"\.csv\.sha256 does not exist, so .* cannot be verified"):
        verify_figure_table(table)
    # the rules that read figure tables check them first
    for script in ("plot.py", "table.py", "claims.py"):
        assert "verify_figure_table(Path(" in (REPO / "scripts" / script).read_text()


def test_a_run_directory_that_resolves_outside_the_results_tree_fails_the_audit(smoke_copy, capsys):
    """The run's files as written, moved outside the repository and reached through a symbolic link."""
    run = run_dirs(smoke_copy)[0]
    outside = smoke_copy.parent / "outside" / run.name
    outside.parent.mkdir()
    shutil.move(run, outside)
    run.symlink_to(outside, target_is_directory=True)
    code, out = audit(capsys)
    assert code == 1
    report = (smoke_copy / "audit" / "smoke" / "fedvr.md").read_text()
    assert f"results/smoke/runs/{run.name} resolves to {outside}, outside the results tree results/smoke/" in report


def test_an_edited_verdict_in_the_ledger_fails_the_audit_naming_the_claim(smoke_copy, capsys):
    """The probe: one verdict of results/smoke/claims/fedvr.csv changed by hand (the ledger is recomputed from its
    verified figure tables by the ledger's own builder and compared)."""
    claim, status, forged = forge_first_verdict(smoke_copy / "results" / "smoke" / "claims" / "fedvr.csv")
    code, out = audit(capsys)
    assert code == 1
    assert (f"results/smoke/claims/fedvr.csv: claim {claim} reads {forged}, but its figure tables give {status}"
            in out)


def test_an_edited_verdict_fails_the_audit_by_its_seal_even_when_a_table_is_unverified(smoke_copy, capsys):
    """The probe: a verdict flipped and a figure table edited too. The audit said "OK claims ... 1 PASS" with a WARN
    "not recomputed" while the CSV said FAIL: it rebuilt the ledger only from verified tables and never checked
    the ledger's own seal. It checks the seal first now."""
    claim, status, forged = forge_first_verdict(smoke_copy / "results" / "smoke" / "claims" / "fedvr.csv")
    flip_last_digit(sorted((smoke_copy / "results" / "smoke" / PAPER).glob("*.csv"))[0])
    code, out = audit(capsys)
    assert code == 1
    report = (smoke_copy / "audit" / "smoke" / "fedvr.md").read_text()
    assert f"claim {claim} reads {forged}, but rule claims wrote {status}" in report
    assert "**OK** claims" not in report

def test_a_figure_swapped_for_another_fails_the_audit_naming_it(smoke_copy, capsys):
    """The probe: fig4.png copied over fig3.png (the audit compares each drawing with the sha256 recorded when it
    was drawn)."""
    figures = smoke_copy / "figures" / "smoke" / "fedvr"
    shutil.copy(figures / "fig4.png", figures / "fig3.png")
    code, out = audit(capsys)
    assert code == 1
    line = next(line for line in out.splitlines() if "figures/smoke/fedvr/fig3.png" in line)
    assert line.lstrip().startswith("FAIL") and sha256(figures / "fig3.png") in line and "when it was drawn" in line


def test_a_run_json_from_before_its_content_hash_is_a_warning_and_one_whose_hash_was_removed_a_failure(
        smoke_copy, capsys):
    """A record from before record_sha256 (2026-11-25) has none of the fields that came after it (`platform`, ...): a
    WARN. Issue 62: deleting the hash from a current record read as that WARN, so a forger could edit the record."""
    run = run_dirs(smoke_copy)[0]
    record = json.loads((run / "run.json").read_text())
    del record[RECORD_SHA256]
    (run / "run.json").write_text(json.dumps(record))
    code, out = audit(capsys)
    assert code == 1 and "the hash was removed" in out
    old = {k: v for k, v in record.items() if k not in LATER_THAN_THE_HASH}
    (run / "run.json").write_text(json.dumps(old))
    code, out = audit(capsys)
    assert code == 0 and "WARN" in out
    assert "predates the hash of its own content" in (smoke_copy / "audit" / "smoke" / "fedvr.md").read_text()


def test_runs_trained_by_other_code_or_before_the_code_hash_are_warnings_counted_in_the_summary(
        smoke_copy, capsys, monkeypatch):
    """Issue 62: a change to the keying table or the kernels left a run trained before it valid under the same id.
    Each run records the hash of the sources that decide its engine's floats; the audit compares it with this code's."""
    runs = run_dirs(smoke_copy)
    assert all(json.loads((r / "run.json").read_text())["code_sha256"] == code_sha256("monte_carlo") for r in runs)
    code, out = audit(capsys)
    assert code == 0 and "code hash:" not in out
    rewrite_record(runs[0], lambda record: record.pop("code_sha256"))  # a run recorded before the code hash
    code, out = audit(capsys)
    assert code == 0 and f"code hash: of {len(runs)} run(s), 0 trained by other code, 1 recorded before" in out
    entry = numerics.KEYING["monte_carlo"]  # this code keys the engine's streams otherwise: every run is stale
    monkeypatch.setitem(numerics.KEYING, "monte_carlo", dataclasses.replace(entry, ignored=entry.ignored[:-1]))
    code, out = audit(capsys)
    assert code == 0 and f"of {len(runs)} run(s), {len(runs) - 1} trained by other code, 1 recorded before" in out
    report = (smoke_copy / "audit" / "smoke" / "fedvr.md").read_text()
    assert report.count("**WARN** code hash: trained by other code: code_sha256 ") == len(runs) - 1
    rewrite_record(runs[1], lambda record: [record.pop(k) for k in (RECORD_SHA256, "platform", "numerics", "resumed")],
                   rehash=False)  # its code hash came after its own hash too: the hash was removed
    code, out = audit(capsys)
    assert code == 1 and "yet records code_sha256, which runs recorded only after that hash" in out


def test_the_audit_hashes_a_spec_under_the_numerics_version_its_run_json_records(smoke_copy, capsys):
    run = run_dirs(smoke_copy)[0]
    record = json.loads((run / "run.json").read_text())
    assert record["numerics"] == 0  # the engine's version, recorded by the run

    def rewrite(**change):
        edited = {k: v for k, v in {**record, **change}.items() if v is not None}
        edited[RECORD_SHA256] = record_sha256(edited)
        (run / "run.json").write_text(json.dumps(edited))

    rewrite(numerics=None)  # a run.json from before versions: made at 0
    assert audit(capsys)[0] == 0
    rewrite(numerics=1)  # a version the run was not made under: its spec hashes to another id
    code, out = audit(capsys)
    assert code == 1 and f"its spec hashes to {run_id_of(record['spec'], 1)}, not to its run_id" in out


def test_aggregate_refuses_a_run_json_without_a_metrics_hash(smoke_copy):
    run = run_dirs(smoke_copy)[0]
    record = json.loads((run / "run.json").read_text())
    del record[METRICS_SHA256]
    (run / "run.json").write_text(json.dumps(record))
    figure = figure_of_run(smoke_copy, run.name)
    with pytest.raises(ResultsError, match=f"records no sha256 of metrics.csv .written by an older fedrepro.*"
                                           f"delete results/smoke/runs/{run.name}/ and run snakemake again"):
        write_figure_table(figure, Path("results/smoke"), smoke_copy / "t.csv")


# --- fedrepro audit -------------------------------------------------------------------------------------------


def test_an_intact_result_set_passes(smoke_copy, capsys):
    code, out = audit(capsys)
    assert code == 0, out
    assert "fedvr (scale smoke)" in out and "runs 5 OK" in out and "FAIL" not in out
    report = (smoke_copy / "audit" / "smoke" / "fedvr.md").read_text()
    assert report.count("this checkout") and report.count("has the same code") == 5
    assert "Scale `smoke`: results of fedvr on disk (results/smoke/fedvr)" in report
    assert report.count("sha256 as recorded") == 5  # each run's data file
    assert "<table>" in (smoke_copy / "audit" / "smoke" / "fedvr.html").read_text()
    assert "not a DVC repository" in report


def test_a_code_change_since_the_run_is_a_warning_naming_the_file(smoke_copy, capsys):
    with open(smoke_copy / "config" / "config.yaml", "a") as fh:
        fh.write("# edited after the runs\n")
    code, out = audit(capsys)
    assert code == 0 and "WARN: code in 5 run(s)" in out
    assert "1 code file(s) differ in this checkout" in (smoke_copy / "audit" / "smoke" / "fedvr.md").read_text()
    assert "config/config.yaml" in (smoke_copy / "audit" / "smoke" / "fedvr.md").read_text()


def test_a_flipped_byte_fails_the_audit_naming_the_file_and_both_hashes(smoke_copy, capsys):
    run = run_dirs(smoke_copy)[2]
    recorded = sha256(run / "metrics.csv")
    flip_last_digit(run / "metrics.csv")
    code, out = audit(capsys)
    assert code == 1
    line = next(line for line in out.splitlines() if f"results/smoke/runs/{run.name}/metrics.csv" in line)
    assert line.lstrip().startswith("FAIL") and recorded in line and sha256(run / "metrics.csv") in line


def test_a_run_gone_from_behind_a_figure_fails_the_audit_naming_what_was_built_from_it(smoke_copy, capsys):
    never, unfinished = run_dirs(smoke_copy)[:2]
    shutil.rmtree(never)
    (unfinished / "run.json").unlink()
    code, out = audit(capsys)
    assert code == 1 and "MISSING: 2 runs" in out
    report = (smoke_copy / "audit" / "smoke" / "fedvr.md").read_text()
    assert f"never trained: results/smoke/runs/{never.name}/run.json does not exist" in report
    assert f"not finished: results/smoke/runs/{unfinished.name}/run.json does not exist" in report
    figure = figure_of_run(smoke_copy, never.name)
    assert (f"results/smoke/fedvr/{figure.name}.csv, figures/smoke/fedvr/{figure.name}.pdf, "
            f"figures/smoke/fedvr/{figure.name}.png built "
            f"from run(s) ") in report and never.name in report and "which are gone" in report


def test_a_ledger_built_from_a_table_that_is_gone_fails_and_runs_never_made_are_only_missing(smoke_copy, capsys):
    table = sorted((smoke_copy / "results" / "smoke" / "fedvr").glob("*.csv"))[0]
    table.unlink()
    code, out = audit(capsys)
    assert code == 1
    assert f"results/smoke/claims/fedvr.csv built from results/smoke/fedvr/{table.name}, which are gone" in (
        smoke_copy / "audit" / "smoke" / "fedvr.md").read_text()
    # nothing built yet: every run, table, figure and the ledger only missing, not a contradiction
    for built in ("results/smoke/fedvr", "figures/smoke/fedvr", "results/smoke/claims", "results/smoke/runs"):
        shutil.rmtree(smoke_copy / built)
    code, out = audit(capsys)
    assert code == 0 and "MISSING" in out and "FAIL" not in out


def test_outputs_gone_from_behind_the_pages_built_from_them_fail_the_audit(smoke_copy, capsys):
    """The probe: right after a kill -9, the outputs Snakemake had deleted to remake them were only MISSING (exit 0)
    while the report pages built from them were still there."""
    out = Layout("smoke")
    figure = load_and_validate({"scale": "smoke"}, Path("config"))[1].figure(PAPER, "fig3")
    write_figure_page(figure, out.figure(PAPER, "fig3", "png"), out.ledger(PAPER), out.results,
                      out.figure(PAPER, "fig3", "html"))
    write_ledger_html(out.ledger(PAPER), out.ledger(PAPER, "html"), PAPER)
    assert audit(capsys)[0] == 0
    for ext in ("pdf", "png", "sha256"):  # rule plot's outputs
        out.figure(PAPER, "fig3", ext).unlink()
    code, said = audit(capsys)
    assert code == 1 and ("FAIL figures/smoke/fedvr/fig3.html built from figures/smoke/fedvr/fig3.png, which are gone"
                          in said)
    for ext in ("csv", "json"):  # rule claims' outputs
        out.ledger(PAPER, ext).unlink()
    code, said = audit(capsys)
    assert code == 1 and ("FAIL results/smoke/claims/fedvr.html, figures/smoke/fedvr/fig3.html built from "
                          "results/smoke/claims/fedvr.csv, which are gone") in said
    out.table(PAPER, "fig4").unlink()  # rule aggregate's output
    code, said = audit(capsys)
    assert "FAIL figures/smoke/fedvr/fig4.pdf, figures/smoke/fedvr/fig4.png built from results/smoke/fedvr/fig4.csv" \
        in said


def test_snakemake_remakes_a_run_deleted_after_its_figure(smoke_copy):
    """Snakemake does not remake a missing input of an up-to-date job: the paper target names its runs."""
    for name in ("Snakefile", "scripts", "profiles"):
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy)(REPO / name, smoke_copy / name)
    run = run_dirs(smoke_copy)[0]
    shutil.rmtree(run)
    done = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-n", "--cores", "1", "--config",
                           "scale=smoke", "--", PAPER], cwd=smoke_copy, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 0, done.stderr
    planned = done.stdout + done.stderr
    assert f"results/smoke/runs/{run.name}/metrics.csv" in planned and "rule train:" in planned
    figure = figure_of_run(smoke_copy, run.name)
    assert f"output: results/smoke/fedvr/{figure.name}.csv" in planned  # and the table built from it


def test_rerun_reports_identical_runs(smoke_copy, capsys):
    code, out = audit(capsys, "--rerun", "3", "--seed", "11")
    assert code == 0, out
    chosen = out.split("seed 11 chose 3 run(s): ")[1].split(" (")[0].split()
    assert len(chosen) == 3 and {p.name for p in run_dirs(smoke_copy)} >= set(chosen)
    assert out.count("metrics.csv byte-identical") == 3


def test_rerun_catches_metrics_altered_together_with_their_hash(smoke_copy, capsys):
    """A forger who also rewrites run.json's hash and the figure tables passes every hash check; the rerun does not."""
    run = run_dirs(smoke_copy)[1]
    original = sha256(run / "metrics.csv")
    flip_last_digit(run / "metrics.csv")
    record = json.loads((run / "run.json").read_text())
    record[METRICS_SHA256] = sha256(run / "metrics.csv")
    record[RECORD_SHA256] = record_sha256(record)  # and the record's own
    (run / "run.json").write_text(json.dumps(record))
    _, table = load_and_validate({"scale": "smoke"}, smoke_copy / "config")
    for figure in table.paper_figures(PAPER):
        write_figure_table(figure, Path("results/smoke"), Path("results/smoke") / PAPER / f"{figure.name}.csv")
    assert audit(capsys)[0] == 0  # nothing on disk contradicts a record

    code, out = audit(capsys, "--rerun", "5")
    assert code == 1
    line = next(line for line in out.splitlines() if "rerun differs" in line)
    assert f"results/smoke/runs/{run.name}/metrics.csv" in line and record[METRICS_SHA256] in line and original in line


def test_rerun_catches_a_run_json_fact_altered_together_with_its_hash(smoke_copy, capsys):
    """A forger who edits a per-seed fact and recomputes run.json's own hash passes the hash checks; the rerun
    recomputes the facts too."""
    run = run_dirs(smoke_copy)[1]
    record = json.loads((run / "run.json").read_text())
    record["summary"]["seeds"]["0"]["diverged_at"] = 0
    record[RECORD_SHA256] = record_sha256(record)
    (run / "run.json").write_text(json.dumps(record))
    code, out = audit(capsys, "--rerun", "5")
    assert code == 1
    line = next(line for line in out.splitlines() if "rerun differs" in line)
    assert f"results/smoke/runs/{run.name}/run.json's summary differ from the rerun's (metrics.csv identical)" in line


def test_dvc_record_file_by_file_and_a_changed_figure_table(smoke_copy, dvc_record, capsys):
    dvc_record(smoke_copy, "results/smoke", "figures/smoke")
    code, out = audit(capsys)
    assert code == 0, out
    report = smoke_copy / "audit" / "smoke" / "fedvr.md"
    assert report.read_text().count("**OK** DVC: as DVC recorded") == 6  # the 5 runs' files and the claims ledger
    assert report.read_text().count("has the same code (it differs only in DVC records and docs)") == 5
    figure_rows = [row for row in report.read_text().splitlines() if row.startswith("| fig") and "| title |" not in row]
    assert len(figure_rows) == 7 and all("| OK | OK | OK |" in row for row in figure_rows)  # table, files, DVC

    flip_last_digit(smoke_copy / "results" / "smoke" / PAPER / "fig3.csv")
    code, out = audit(capsys)
    assert code == 1
    assert "FAIL results/smoke/fedvr/fig3.csv differs from the table its runs give" in out

    run = run_dirs(smoke_copy)[0]
    flip_last_digit(run / "run.json")  # still valid JSON: only DVC's record says it changed
    assert audit(capsys)[0] == 1
    lines = [line for line in report.read_text().splitlines() if f"results/smoke/runs/{run.name}/run.json: modified" in line]
    assert lines and all(line.startswith("- **FAIL** DVC:") and "`dvc checkout --force results/smoke` restores" in line
                         for line in lines)


def test_the_table_of_an_alternative_reading_is_audited_like_a_figures(smoke_copy):
    """The ledger reads an alternative reading's tables too (config readings: all): an edit there is a FAIL."""
    from fedrepro.experiments.runtable import Alternative
    from fedrepro.results.audit import FAIL, OK, Checkout, audit_paper

    _, table = load_and_validate({"scale": "smoke"}, smoke_copy / "config")
    figure = table.paper_figures(PAPER)[0]
    alternative = Alternative("steps", "wide", {figure.name: figure})
    path = Layout("smoke", smoke_copy).reading_table(PAPER, "steps", "wide", figure.name)
    write_figure_table(figure, Layout("smoke", smoke_copy).results, path)

    def findings():
        audit = audit_paper(PAPER, table.paper_figures(PAPER), "smoke", "test", Checkout.of(Path(".")), [alternative])
        under = next(f for f in audit.figures if f.name == f"{figure.name} under steps=wide")
        return [(f.check, f.status) for f in under.findings]

    assert ("table", OK) in findings() and not any(check == "files" for check, _ in findings())  # no drawing
    flip_last_digit(path)
    assert ("table", FAIL) in findings()


def _forge(run: Path, relative: float, cpu_model: str | None) -> None:
    """metrics.csv's floats scaled by 1 + relative, with run.json's hashes rewritten to match (and, given
    cpu_model, the platform it records): a rerun on another CPU that rounds differently, simulated."""
    import pandas as pd

    metrics = pd.read_csv(run / "metrics.csv")
    floats = metrics.select_dtypes("float").columns
    metrics[floats] = metrics[floats] * (1 + relative)
    metrics.to_csv(run / "metrics.csv", index=False, float_format="%.17g")
    record = json.loads((run / "run.json").read_text())
    if cpu_model:
        record["platform"]["cpu_model"] = cpu_model
    record[METRICS_SHA256] = sha256(run / "metrics.csv")
    record[RECORD_SHA256] = record_sha256(record)
    (run / "run.json").write_text(json.dumps(record))


@pytest.mark.parametrize("relative, cpu_model, outcome", [
    (1e-9, "Another CPU", "numerically equal within relative tolerance 1e-06"),  # last bits, another platform
    (1e-9, None, "rerun differs"),  # the same platform: nothing explains it
    (1e-3, "Another CPU", "rerun differs"),  # beyond the tolerance, wherever it ran
])
def test_a_rerun_elsewhere_equal_in_all_but_the_last_bits_is_explained_by_the_platform(
        smoke_copy, capsys, relative, cpu_model, outcome):
    run = run_dirs(smoke_copy)[1]
    _forge(run, relative, cpu_model)
    _, table = load_and_validate({"scale": "smoke"}, smoke_copy / "config")
    for figure in table.paper_figures(PAPER):  # the tables follow the metrics, as they would after the rerun
        write_figure_table(figure, Path("results/smoke"), Path("results/smoke") / PAPER / f"{figure.name}.csv")
    code, out = audit(capsys, "--rerun", "5")
    line = next(line for line in out.splitlines() if "rerun numerically" in line or "rerun differs" in line)
    assert outcome in line and code == (0 if outcome.startswith("numerically") else 1), line
    if cpu_model:
        assert f"cpu_model: {cpu_model} -> " in line
    else:
        assert "same platform" in line


# --- runs a rerun cannot verify here: drawn all the same, and the exit status says so (issue 62) ----------------


def rewrite_record(run: Path, change: Callable[[dict], None], rehash: bool = True) -> None:
    """run.json changed by `change`, its own content hash recomputed to match (a forger's edit that passes the hash
    checks); without `rehash`, left as `change` leaves it."""
    record = json.loads((run / "run.json").read_text())
    change(record)
    if rehash:
        record[RECORD_SHA256] = record_sha256(record)
    (run / "run.json").write_text(json.dumps(record))


def rerun_line(out: str, run: Path) -> str:
    return next(line for line in out.splitlines() if line.lstrip().startswith(f"{run.name}: "))


def as_before_the_hash(record: dict) -> None:
    """A run.json made to read as one from before record_sha256: the hash and the fields that came after it gone."""
    for key in (RECORD_SHA256, *LATER_THAN_THE_HASH):
        record.pop(key, None)


def test_a_run_json_without_its_own_hash_is_drawn_and_not_verified(smoke_copy, capsys):
    """A forger who deletes record_sha256 with the fields that came after it (so it reads as a record from before the
    hash) gets a WARN only; the rerun used to draw no such run and exit 0."""
    run = run_dirs(smoke_copy)[0]
    rewrite_record(run, as_before_the_hash, rehash=False)
    assert audit(capsys)[0] == 0  # no record contradicted: a WARN
    code, out = audit(capsys, "--rerun", "1000", "--seed", "1")
    assert code == 3, out
    assert "seed 1 chose 5 run(s)" in out and out.count("metrics.csv byte-identical") == 4
    line = rerun_line(out, run)
    assert line.lstrip().startswith(f"{run.name}: UNVERIFIED not verified, cannot rerun it here: "
                                    f"results/smoke/runs/{run.name}/run.json records no sha256 of its own content")
    assert "UNVERIFIED: 1 run(s) drawn for a rerun could not be recomputed here" in out
    report = (smoke_copy / "audit" / "smoke" / "fedvr.md").read_text()
    assert "## Not verified" in report and f"#### `{run.name}`: UNVERIFIED" in report


def test_a_run_recorded_on_cuda_is_drawn_and_not_verified_on_a_machine_without_cuda(smoke_copy, capsys, monkeypatch):
    """A forger who writes `cuda:0` as the device (and rehashes run.json) used to get 'WARN cannot rerun', exit 0."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a CPU machine, whatever this one has
    run = run_dirs(smoke_copy)[2]
    rewrite_record(run, lambda record: record["device"].update(device="cuda:0"))
    assert audit(capsys)[0] == 0  # the record is consistent: nothing contradicts it
    code, out = audit(capsys, "--rerun", "1000")
    assert code == 3, out
    assert f"{run.name}: UNVERIFIED not verified, cannot rerun it here: it ran on cuda:0 and torch finds no CUDA " \
           f"device here: rerun it on a machine with CUDA" in out
    assert out.count("metrics.csv byte-identical") == 4


def test_runs_whose_inputs_are_missing_are_not_verified(smoke_copy, capsys):
    (smoke_copy / "data" / "prepared" / "insurance.npz").unlink()
    code, out = audit(capsys, "--rerun", "2")
    assert code == 3, out
    assert out.count("cannot rerun it here: data/prepared/insurance.npz missing (`snakemake "
                     "data/prepared/insurance.npz` makes it)") == 2


def test_a_rerun_that_differs_outranks_a_run_not_verified(smoke_copy, capsys):
    """Exit 1 (a mismatch), not 3, when one drawn run differs and another could not be verified."""
    forged, unhashed = run_dirs(smoke_copy)[1], run_dirs(smoke_copy)[0]
    _forge(forged, 1e-9, None)
    _, table = load_and_validate({"scale": "smoke"}, smoke_copy / "config")
    for figure in table.paper_figures(PAPER):  # the tables follow the metrics: only the rerun can tell
        write_figure_table(figure, Path("results/smoke"), Path("results/smoke") / PAPER / f"{figure.name}.csv")
    rewrite_record(unhashed, as_before_the_hash, rehash=False)
    assert audit(capsys)[0] == 0
    code, out = audit(capsys, "--rerun", "5")
    assert code == 1, out
    assert "rerun differs" in rerun_line(out, forged) and "UNVERIFIED" in rerun_line(out, unhashed)


def forge_first_verdict(ledger: Path) -> tuple[str, str, str]:
    """The probe: the first claim's verdict changed by hand (C0 PASS -> FAIL); its claim, old and new verdicts."""
    rows = ledger.read_text().splitlines()
    claim, status = rows[1].split(",")[0], next(s for s in ("PASS", "FAIL", "INCONCLUSIVE") if f",{s}," in rows[1])
    forged = "FAIL" if status != "FAIL" else "PASS"
    ledger.write_text("\n".join([rows[0], rows[1].replace(f",{status},", f",{forged},", 1), *rows[2:]]) + "\n")
    return claim, status, forged


def test_the_ledger_table_figure_pages_and_report_are_built_only_from_the_ledger_rule_claims_wrote(smoke_copy):
    """An edited ledger stopped only the audit: the next snakemake rebuilt the ledger's HTML table and the figure
    pages from it, and the report counted it. Each now refuses in one line naming the file and the claim."""
    out, ledger = Layout("smoke"), Path("results/smoke/claims/fedvr.csv")
    figure = load_and_validate({"scale": "smoke"}, Path("config"))[1].figure(PAPER, "fig3")
    builds = {"ledger table": lambda: write_ledger_html(ledger, Path("ledger.html"), PAPER),
              "figure page": lambda: write_figure_page(figure, out.figure(PAPER, "fig3", "png"), ledger, out.results,
                                                       Path("fig3.html")),
              "report": lambda: str(Overview(Path("."), "smoke"))}
    for build in builds.values():
        build()  # the ledger as rule claims wrote it
    claim, status, forged = forge_first_verdict(ledger)
    for name, build in builds.items():
        with pytest.raises(ResultsError) as refused:
            build()
        message = str(refused.value)
        assert "\n" not in message, name
        assert (f"results/smoke/claims/fedvr.csv was changed after rule claims wrote it: claim {claim} reads {forged}, "
                f"but rule claims wrote {status} (sha256 ") in message, name
    # a cell other than the verdict: the claim is named all the same
    rows = ledger.read_text().splitlines()
    ledger.write_text("\n".join([rows[0], rows[1].replace(f",{forged},", f",{status},", 1), rows[2] + " ", *rows[3:]])
                      + "\n")
    with pytest.raises(ResultsError, match=rf"claim {rows[2].split(',')[0]}'s row differs from the one rule claims "
                                           rf"wrote \(sha256 "):
        builds["ledger table"]()


def test_the_report_refuses_a_figure_swapped_for_another(smoke_copy):
    figures = Path("figures/smoke/fedvr")
    shutil.copy(figures / "fig4.png", figures / "fig3.png")
    with pytest.raises(ResultsError, match=r"^no report: figures/smoke/fedvr/fig3.png was changed after it was drawn"):
        str(Overview(Path("."), "smoke"))


def run_rule_claims(root: Path) -> None:
    """scripts/claims.py as Snakemake runs it (its `snakemake` object); on a failure, the outputs Snakemake then
    deletes are deleted."""
    out, settings = Layout("smoke"), load_and_validate({"scale": "smoke"}, root / "config")[1].ledger_settings(PAPER)
    outputs = {"ledger": out.ledger(PAPER), "record": out.ledger(PAPER, "json"),
               **{ext: out.figure(PAPER, "claims", ext) for ext in ("pdf", "png")},
               "figure_record": out.figure(PAPER, "claims", "sha256")}
    job = SimpleNamespace(
        input=SimpleNamespace(tables=[str(out.table(PAPER, f)) for f in settings["figures"]], alternatives=[],
                              claims=f"config/claims/{PAPER}.yaml"),
        output=SimpleNamespace(**{k: str(v) for k, v in outputs.items()}), log=[str(root / "claims.log")],
        params=SimpleNamespace(**{k: settings[k] for k in ("figures", "scale_note", "readings", "alternatives", "seeds")},
                               look={"mode": "fixed", "number": 1, "planned": [], "plan": ""}),
        wildcards=SimpleNamespace(paper=PAPER, scale="smoke"))
    try:
        runpy.run_path(str(REPO / "scripts" / "claims.py"), init_globals={"snakemake": job})
    except SystemExit:
        for path in outputs.values():
            path.unlink(missing_ok=True)
        raise


def test_a_ledger_deleted_by_a_failed_claims_job_is_a_fail_naming_the_cause(smoke_copy, capsys):
    """The probe: an edited figure table stops rule claims, Snakemake deletes its ledger, and the audit said only
    MISSING (exit 0) once the table was put back, no longer naming the table that caused it."""
    table = Path("results/smoke/fedvr/fig3.csv")
    original = table.read_bytes()
    flip_last_digit(table)
    with pytest.raises(SystemExit):
        run_rule_claims(smoke_copy)
    assert not Path("results/smoke/claims/fedvr.csv").exists()
    table.write_bytes(original)
    capsys.readouterr()
    code, out = audit(capsys)
    assert code == 1
    line = next(line for line in out.splitlines() if "results/smoke/claims/fedvr.csv does not exist" in line)
    assert line.lstrip().startswith("FAIL") and "rule claims failed at " in line
    assert "results/smoke/fedvr/fig3.csv was changed after aggregate wrote it" in line
    run_rule_claims(smoke_copy)  # the cause fixed: the ledger is back, the record of the failure gone
    assert Path("results/smoke/claims/fedvr.csv").is_file() and not Layout("smoke").ledger_failure(PAPER).exists()


def test_a_ledger_deleted_after_its_claims_job_was_killed_is_a_fail_saying_so(smoke_copy, capsys):
    """A job killed outright (kill -9, a cluster's time limit) runs no handler: the record its step wrote when it
    started is what the audit reads."""
    step = ("import os, signal, sys; from pathlib import Path; from fedrepro.cli import run_step; "
            "run_step(lambda: os.kill(os.getpid(), signal.SIGKILL), None, failure=Path(sys.argv[1]))")
    killed = subprocess.run([sys.executable, "-c", step, str(Layout("smoke").ledger_failure(PAPER))],
                            env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert killed.returncode == -9
    for ext in ("csv", "json"):  # the outputs Snakemake deletes
        Layout("smoke").ledger(PAPER, ext).unlink()
    code, out = audit(capsys)
    assert code == 1
    line = next(line for line in out.splitlines() if "results/smoke/claims/fedvr.csv does not exist" in line)
    assert line.lstrip().startswith("FAIL") and "and did not finish: it was killed" in line


def test_a_claims_job_stopped_after_its_ledger_is_a_fail_and_its_figure_missing(smoke_copy, capsys):
    """The probe: a kill late in rule claims leaves a whole ledger, no claims figure and the record its step wrote
    when it started; the audit said WARN (exit 0) and named neither."""
    step = ("import os, signal, sys; from pathlib import Path; from fedrepro.cli import run_step; "
            "run_step(lambda: os.kill(os.getpid(), signal.SIGKILL), None, failure=Path(sys.argv[1]))")
    killed = subprocess.run([sys.executable, "-c", step, str(Layout("smoke").ledger_failure(PAPER))],
                            env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert killed.returncode == -9
    for ext in ("pdf", "png"):
        Layout("smoke").claims_figure(PAPER, ext).unlink()
    code, out = audit(capsys)
    assert code == 1
    lines = out.splitlines()
    stopped = next(line for line in lines if "may be from an earlier job" in line)
    assert stopped.lstrip().startswith("FAIL") and "and did not finish: it was killed" in stopped
    assert any(line.lstrip().startswith("MISSING: 1 figures") for line in lines)  # the summary counts them
    report = next(Path(".").rglob("audit/smoke/fedvr.md")).read_text()  # and the paper's report names them
    assert "figures/smoke/fedvr/claims.pdf, figures/smoke/fedvr/claims.png not made" in report
