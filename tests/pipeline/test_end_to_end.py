"""End to end on a copy of the repository: the smoke scale through Snakemake, the report,
and the DVC round trip a reviewer relies on (record, detect a change, push, pull into a
fresh clone with nothing left to rerun)."""

from pathlib import Path

import pandas as pd
import pytest

from browser import CHROMIUM, rendered_dom
from fedrepro.claims.causes import CAUSES
from fedrepro.claims.robustness import TOO_FEW_SEEDS, decode
from fedrepro.validate import load_and_validate
from fedrepro.verdicts import VERDICTS
from sealed import seal
from workflow_copy import BIN, MIRROR, copy_checkout, run

TRACKED = ["data/raw", "data/prepared", "results/smoke", "figures/smoke"]  # what `make record SCALE=smoke` records

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (MIRROR / "MANIFEST.json").exists(), reason=f"no data mirror at {MIRROR}"),
]


def sh(*cmd: str, cwd: Path) -> str:
    done = run(*cmd, cwd=cwd, env={"FEDREPRO_DATA_MIRROR": str(MIRROR)})
    return done.stdout + done.stderr


def test_smoke_run_report_and_dvc_round_trip(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    copy_checkout(work)

    sh(BIN / "snakemake", "--cores", "2", "--config", "scale=smoke", "readings=all", cwd=work)
    results, figures = work / "results" / "smoke", work / "figures" / "smoke"
    assert sorted(p.name for p in (work / "results").iterdir()) == [".gitignore", "smoke"]  # the scale's own tree
    table = load_and_validate({"scale": "smoke"}, work / "config")[1]  # every paper's figures, as configured
    for paper in sorted({paper for paper, _ in table.figures}):
        made = sorted(p.name for p in (figures / paper).iterdir())
        for fig in table.paper_figures(paper):
            assert {f"{fig.name}.{ext}" for ext in fig.formats} <= set(made), (paper, fig.name)
            assert (results / paper / f"{fig.name}.csv").exists()
        claims = pd.read_csv(results / "claims" / f"{paper}.csv")
        assert set(claims["status"]) <= set(VERDICTS) and (claims["scale"] == "smoke").all()
        assert {"support", "margin", "margin_se"} <= set(claims.columns)
        assert {"claims.pdf", "claims.png"} <= set(made) and (results / "claims" / f"{paper}.json").exists()
    # make test runs the alternative readings at smoke, and the ledger says what it did with each: an alternative
    # that trains runs has one seed there, too few for the rule (listed, not judged); one of the check is judged
    ledger = pd.read_csv(results / "claims" / "defedavg.csv", dtype=str, keep_default_na=False).set_index("claim_id")
    alternatives = {c: {a.name: a for a in decode(ledger.loc[c, "alternatives"])} for c in ("C4a", "C1b")}
    assert alternatives["C4a"]["fedbuff_staleness=none"].untested == TOO_FEW_SEEDS
    assert alternatives["C1b"]["favano=k_over_q"].untested == TOO_FEW_SEEDS
    assert alternatives["C4a"]["time_to_target=seed_times"].verdict in VERDICTS
    assert ledger.loc["C4a", "robustness"] in ("robust", "depends")
    assert set(ledger["cause"]) <= {"", *CAUSES}
    assert (results / "defedavg" / "readings" / "fedbuff_staleness" / "none" / "table1.csv").exists()
    table1 = pd.read_csv(figures / "defedavg" / "table1.csv", dtype=str, keep_default_na=False)
    assert len(table1) == 64 and (table1["ours"] != "").all() and (table1["paper"] != "").all()  # Table I, every cell
    fedpage_claims = set(pd.read_csv(results / "claims" / "fedpage.csv")["claim_id"])
    assert {"C5a", "C6a", "C10", "C11"} <= fedpage_claims
    # expected results: the run becomes the reference, a rerun's results agree with it, and a reference verdict
    # that differs from the local one is named, with exit 1; the pages render it, and --check sees the change;
    # a reference edited by hand (not sealed again) is refused
    sh(BIN / "fedrepro", "docs", "--from-results", "smoke", cwd=work)
    reference = work / "docs" / "papers" / "fedvr" / "smoke"
    assert {"ledger.csv", "ledger.json", "digest.csv", "stamp.json", "fig3.png", "claims.png"} <= {
        p.name for p in reference.iterdir()}
    assert "#### At `smoke`" in (work / "docs" / "papers" / "fedvr" / "verdicts.md").read_text()
    assert "at `smoke` |" in (work / "docs" / "papers" / "fedvr.md").read_text()  # the claim card's column
    agree = sh(BIN / "fedrepro", "compare", "--scale", "smoke", cwd=work)
    assert "fedvr at smoke: the verdicts agree" in agree and "fig3     identical" in agree, agree
    ledger_ref = pd.read_csv(reference / "ledger.csv", dtype=str, keep_default_na=False)
    flipped = ledger_ref.loc[0, "claim_id"]
    ledger_ref.loc[0, "status"] = "FAIL" if ledger_ref.loc[0, "status"] != "FAIL" else "PASS"
    ledger_ref.to_csv(reference / "ledger.csv", index=False)
    seal(reference / "ledger.csv")  # as another run's ledger would be: a reference that differs, not a forged one
    differ = run(BIN / "fedrepro", "compare", "fedvr", "--scale", "smoke", cwd=work, check=False)
    assert differ.returncode == 1 and f"* {flipped:<6}" in differ.stdout, differ.stdout + differ.stderr
    assert run(BIN / "fedrepro", "docs", "--check", cwd=work, check=False).returncode == 1
    ledger_ref.loc[0, "status"] = "INCONCLUSIVE"
    ledger_ref.to_csv(reference / "ledger.csv", index=False)
    forged = run(BIN / "fedrepro", "compare", "fedvr", "--scale", "smoke", cwd=work, check=False)
    assert forged.returncode != 0 and "was changed after rule claims wrote it" in forged.stderr, forged.stderr
    seal(reference / "ledger.csv")
    # every job's cost is on record (Snakemake's benchmark files), summed per paper and rule
    cost = sh(BIN / "fedrepro", "cost", "--scale", "smoke", cwd=work)
    assert "| fedpage | train |" in cost and "| fedpage | plot |" in cost and "| defedavg | claims |" in cost
    record = next((results / "runs").glob("*/run.json")).read_text()
    assert '"source": "mirror"' in record and '"sha256"' in record
    # a figure's path names its scale: with the configured scale (quick) it is still the smoke figure, up to date,
    # and another scale's target plans only that scale's files
    assert "Nothing to be done" in sh(BIN / "snakemake", "-n", "--cores", "1", "figures/smoke/fedpage/fig2a.pdf", cwd=work)
    quick = sh(BIN / "snakemake", "-n", "--cores", "1", "--config", "scale=quick", "--", "fedvr", cwd=work)
    assert "figures/quick/fedvr/fig3.pdf" in quick and "/smoke/" not in quick

    sh(BIN / "snakemake", "--cores", "1", "--config", "scale=smoke", "readings=all", "--report",
       "results/smoke/report.html", cwd=work)
    report = (results / "report.html").read_text(errors="replace")
    assert "fig2a" in report and "fedpage.csv" in report and "claims support" in report
    if CHROMIUM:  # in a real browser: the front page has the verdict table; a figure's page, its provenance and claims
        front = rendered_dom(results / "report.html")
        assert "across readings" in front and "code (runs per commit)" in front and ">fedpage<" in front, front[:3000]
        page = rendered_dom(figures / "fedpage" / "fig2a.html")
        assert "<h3>Provenance</h3>" in page and "mirror" in page and "<h3>Claims that read this figure</h3>" in page
        assert page.count('<tr class="') >= 1  # a ledger row that reads fig2a
    # the ledger as a table, a figure's settings as text (not the repr of its Figure)
    # (counted, not `in`: pytest's explanation of a failed `in` diffs the whole 10 MB report)
    assert "results/smoke/claims/fedpage.html" in report and report.count("Figure(paper=") == 0
    assert "Claims ledger of fedpage (scale smoke)" in (results / "claims" / "fedpage.html").read_text()

    # record, then a single changed byte is reported
    sh(BIN / "dvc", "add", "--quiet", *TRACKED, cwd=work)
    sh("git", "add", "-A", cwd=work)
    sh("git", "commit", "-qm", "results", cwd=work)
    assert "up to date" in sh(BIN / "dvc", "status", cwd=work)
    table = results / "fedpage" / "fig2a.csv"
    original = table.read_bytes()
    table.write_bytes(original[:-2] + bytes([original[-2] ^ 1]) + original[-1:])
    assert "modified" in sh(BIN / "dvc", "status", cwd=work)
    table.write_bytes(original)
    assert "up to date" in sh(BIN / "dvc", "status", cwd=work)

    # push to the default remote (beside the repository), pull into a fresh clone
    sh(BIN / "dvc", "push", "--quiet", cwd=work)
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", str(work), str(clone), cwd=tmp_path)
    # what `make pull SCALE=smoke` does, without reinstalling
    sh(BIN / "dvc", "pull", "--quiet", *(f"{t}.dvc" for t in TRACKED), cwd=clone)
    assert (clone / "results" / "smoke" / "fedpage" / "fig2a.csv").read_bytes() == original
    assert (clone / "figures" / "smoke" / "fedpage" / "fig6.pdf").exists()
    sh(BIN / "snakemake", "--cores", "1", "--touch", "--quiet", "--config", "scale=smoke", "readings=all", cwd=clone)
    dry = sh(BIN / "snakemake", "-n", "--cores", "1", "--config", "scale=smoke", "readings=all", cwd=clone)
    assert "Nothing to be done" in dry, dry[-6000:]
    assert "up to date" in sh(BIN / "dvc", "status", cwd=clone)

    # rerunning the figure's runs still reruns everything after them (nothing downstream is skipped)
    dry = sh(BIN / "snakemake", "figures/smoke/fedpage/fig2a.png", "-n", "--cores", "1", "--forcerun", "train",
             "--config", "scale=smoke", "readings=all", cwd=clone)
    assert "rule aggregate" in dry and "rule plot" in dry
