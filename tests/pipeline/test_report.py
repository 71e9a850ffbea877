"""What the HTML report shows: a figure's settings as text, the claims ledger as a table, captions that name
only what their rules have."""

import math
import re
from pathlib import Path

import pandas as pd

from fedrepro.claims.table import write_ledger_html
from fedrepro.validate import load_and_validate
from sealed import seal

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"


def test_a_figures_parameters_read_as_text():
    _, table = load_and_validate({"scale": "smoke", "papers": ["fedpage"]}, CONFIG)
    figure = table.figure("fedpage", "fig2a")
    text = str(figure)
    assert "Figure(" not in text and "Curve(" not in text and "\n" not in text
    assert figure.title in text and "y = grad_norm" in text and "scale smoke" in text
    assert all(curve.run_id in text and curve.label in text for curve in figure.curves)
    assert repr(figure).startswith("Figure(paper='fedpage'")  # what Snakemake compares to see a change: unchanged


def test_the_ledger_becomes_an_html_table_with_escaped_text(tmp_path):
    ledger = pd.DataFrame({
        "claim_id": ["C1", "C2"], "figure": ["fig2a", "fig3"], "scale": ["smoke", "smoke"],
        "status": ["PASS", "INCONCLUSIVE"], "support": [0.955, math.nan], "margin": [0.123456, -1.0],
        "margin_se": [2.0, math.nan], "measured": ["3 < 4", ""], "expected": ["a & b", ""],
        "note": ["", "not decided by 2 seeds"], "quote": ['"<b>much</b> faster"', "x"],
        "kind": ["paper", "implementation"], "cause": ["", "seeds"]})
    ledger.to_csv(tmp_path / "fedpage.csv", index=False)
    seal(tmp_path / "fedpage.csv")
    write_ledger_html(tmp_path / "fedpage.csv", tmp_path / "fedpage.html", "fedpage", "Deviations: n < 10 & more")
    page = (tmp_path / "fedpage.html").read_text()
    assert "Claims ledger of fedpage (scale smoke)" in page
    assert "1 PASS, 0 FAIL, 0 INCONCLUSIVE of 1 paper claim; implementation checks: 1 INCONCLUSIVE" in page
    assert "<p>Deviations: n &lt; 10 &amp; more</p>" in page
    assert page.count("<tr>") == 3 and "<th" in page  # header + one row per claim
    assert "&lt;b&gt;much&lt;/b&gt;" in page and "<b>much" not in page and "a &amp; b" in page
    assert ">95.5%<" in page and ">0.123 (2 sd)<" in page and "nan" not in page.lower()
    assert "#c8e6c9" in page  # PASS coloured


def test_a_caption_names_only_params_its_rules_have():
    """Jinja renders a param a rule lacks as nothing: the audit's and the claims figure's captions read
    ``{{ snakemake.params.scale }}``, which neither rule has, and the report showed "````" and a docutils warning."""
    problems = []
    for smk in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        for block in re.split(r"\n(?=rule )", smk.read_text()):
            name = block.split(":")[0].removeprefix("rule ").strip()
            params = set(re.findall(r"\n {8}(\w+)=", block.split("\n    params:")[1].split("\n    log:")[0])) \
                if "\n    params:" in block else set()
            for caption in re.findall(r'caption="\.\./report/([\w.]+)"', block):
                used = set(re.findall(r"snakemake\.params\.(\w+)", (ROOT / "workflow" / "report" / caption).read_text()))
                problems += [f"{caption} names params.{p}, which rule {name} lacks" for p in sorted(used - params)]
    assert problems == []


HOSTILE = "ok\n\n.. raw:: html\n\n   <script>alert(1)</script> |sub| *x*"


def test_text_from_a_plan_a_caption_or_a_ledger_reaches_the_report_as_text():
    """The probes: a `.. raw:: html` block with a `<script>` in a seed plan's `why`, in a figure's caption and in a
    ledger note came out raw. Every string from a results file or a configuration is one escaped line of text."""
    from docutils.core import publish_parts

    from fedrepro.claims.seed_plan import plan_text
    from fedrepro.report_pages import figure_text, rst_text

    plan = {"mode": "adaptive", "max_seeds": 10, "budget_minutes": 60, "minutes": 1.0, "runs": [],
            "claims": [{"paper": "fedvr", "claim": "C1", "planned": False, "why": HOSTILE, "runs": []}]}
    _, table = load_and_validate({"scale": "smoke", "papers": ["fedvr"]}, CONFIG)
    figure = table.figure("fedvr", "fig3")
    figure.caption = HOSTILE
    for text in (rst_text(plan_text(plan)), figure_text(figure)["caption"], rst_text(HOSTILE)):
        assert "\n" not in text
        body = publish_parts(text, writer_name="html", settings_overrides={"report_level": 5})["body"]
        assert "<script>" not in body and "&lt;script&gt;" in body and "raw" in body  # shown, never run
    rendered = publish_parts(f"**{figure_text(figure)['title']}**", writer_name="html")["body"]
    assert figure.title.split(":")[0] in rendered


def test_the_front_page_refuses_a_plan_other_than_the_one_the_ledgers_were_judged_with(tmp_path):
    """The probes: after the second look, a plan with edited minutes reached the report's front page unflagged. A
    plan is refused there as an edited ledger is: when a second look's record names another sha256."""
    import pytest

    from fedrepro.claims.seed_plan import FILE, write_plan
    from fedrepro.claims.sequential import ADAPTIVE, Look
    from fedrepro.errors import ResultsError
    from fedrepro.layout import Layout
    from fedrepro.report_pages import overview
    from fedrepro.utils.digest import file_sha256

    out = Layout("smoke", tmp_path)
    plan = {"mode": "adaptive", "max_seeds": 10, "budget_minutes": 60, "minutes": 1.0, "runs": [], "claims": []}
    write_plan(plan, out.results / FILE)
    ledger = out.ledger("fedvr")
    ledger.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"claim_id": ["C1"], "kind": ["paper"], "status": ["PASS"]}).to_csv(ledger, index=False)
    seal(ledger, Look(ADAPTIVE, 2, (), file_sha256(out.results / FILE)))
    assert "Seed plan (adaptive" in overview(tmp_path, "smoke")
    write_plan({**plan, "minutes": 0.0}, out.results / FILE)
    with pytest.raises(ResultsError, match="is not the plan the ledger was judged with"):
        overview(tmp_path, "smoke")
