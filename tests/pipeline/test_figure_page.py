"""The report's own pages, read from files on disk: the front page's verdicts per paper and scale, and a figure's
page with what its runs ran on and only the claims that read it, rendered in a real headless browser."""

import html
import json
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from docutils.core import publish_parts

from browser import needs_chromium, probed, rendered_dom
from fedrepro.claims.table import ledger_html, write_ledger_html
from fedrepro.layout import Layout
from fedrepro.claims.robustness import Alternative, encode
from fedrepro.report_pages import Overview, report_group, write_figure_page
from fedrepro.validate import load_and_validate
from sealed import seal
from workflow_copy import BIN, REPO, run

CONFIG = Path(__file__).resolve().parents[2] / "config"
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cf"
                    "c0f01f0005000201a5b1f6a70000000049454e44ae426082")  # a 1x1 PNG


def _ledger(path: Path, scale: str) -> None:
    """Three claims of the paper (one of each verdict) and a passing implementation check (C0)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"claim_id": ["C0", "C1", "C2", "C3"], "kind": ["implementation", "paper", "paper", "paper"],
                  "figure": ["fig3", "fig3", "fig3 fig4", "fig9"], "scale": [scale] * 4,
                  "status": ["PASS", "PASS", "FAIL", "INCONCLUSIVE"], "cause": ["", "", "reading", "seeds"],
                  "seeds_needed": ["", "", "", "7"], "robustness": ["", "robust", "depends", ""],
                  "alternatives": ["", encode([Alternative("r", "a", "PASS")]),
                                   encode([Alternative("r", "a", "PASS", True)]), ""],
                  "support": [None, 0.97, 0.95, None], "margin": [0.0, 0.1, -0.2, None],
                  "margin_se": [None, 3.0, 2.5, None],
                  "measured": ["f* 0.0092", "fedavg_svrg 0.001 vs fedavg_prob 0.01", "fedavg_svrg 3 vs fedavg_prob 2",
                               ""],
                  "expected": ["0.008 <= f* <= 0.012", "a < b", "a < b", ""], "note": ["", "", "", "not tested"],
                  "quote": ["the optimal cost", "SVRG is faster", "SVRG has less variance", "three algorithms"]}
                 ).to_csv(path, index=False)
    seal(path)


def _runs(out: Layout, run_ids: list[str], paper: str) -> None:
    for i, run_id in enumerate(run_ids):
        (out.runs / run_id).mkdir(parents=True)
        (out.runs / run_id / "run.json").write_text(json.dumps({
            "spec": {"paper": paper}, "git": {"commit": "0123456789abcdef", "dirty": bool(i)},
            "device": {"device": "cpu"}, "packages": {"python": "3.11.7", "torch": "2.13.0+cpu"},
            "data_files": [{"dataset": "insurance", "name": "insurance.csv", "source": "mirror",
                            "sha256": "505c1cbc2e63d0363bac59501563df2530aadf4cdb9cfee226f4ef32f5468281"}]}))


class _Cells(HTMLParser):
    """The first table's cells as text, row by row (pandas.read_html would need lxml)."""

    def __init__(self, page: str):
        super().__init__()
        self.rows, self._cell, self._tables = [], None, 0
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self._tables += tag == "table"
        if self._tables == 1 and tag == "tr":
            self.rows.append([])
        if self._tables == 1 and tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(self._cell.strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def _table(page: str) -> pd.DataFrame:
    header, *rows = [r for r in _Cells(page).rows if r]
    return pd.DataFrame(rows, columns=header)


@pytest.fixture
def fedvr_on_disk(tmp_path):
    """fedvr's smoke fig3 with its runs' records and a ledger; a quick ledger beside it."""
    _, table = load_and_validate({"scale": "smoke"}, CONFIG)
    figure = table.figure("fedvr", "fig3")
    out = Layout("smoke", tmp_path)
    _runs(out, figure.run_ids, "fedvr")
    _ledger(out.ledger("fedvr"), "smoke")
    _ledger(Layout("quick", tmp_path).ledger("fedvr"), "quick")
    out.figure("fedvr", "fig3", "png").parent.mkdir(parents=True)
    out.figure("fedvr", "fig3", "png").write_bytes(PNG)
    return tmp_path, out, figure, table


def test_the_front_page_counts_the_verdicts_of_every_paper_and_scale_on_disk(fedvr_on_disk):
    root, out, _, _ = fedvr_on_disk
    write_ledger_html(out.ledger("fedvr"), out.ledger("fedvr", "html"), "fedvr")  # the table in the report
    page = publish_parts(str(Overview(root, "smoke")), writer="html")["html_body"]  # as the report renders it
    rows = _table(page)
    assert list(rows["scale"]) == ["smoke", "", "quick", ""] and list(rows["paper"]) == ["fedvr", "", "fedvr", ""]
    smoke, checks = rows.iloc[0], rows.iloc[1]
    assert smoke["claims"] == "the paper's (3)" and checks["claims"] == "implementation checks (1)"
    assert (smoke["PASS"], smoke["FAIL"], smoke["INCONCLUSIVE"]) == ("1", "1", "1")  # the paper's claims only
    assert (checks["PASS"], checks["FAIL"], checks["INCONCLUSIVE"]) == ("1", "0", "0")  # C0, on its own line
    assert smoke["across readings"] == "1 depends, 1 robust" and smoke["data"] == "mirror"
    assert smoke["code (runs per commit)"].startswith("0123456")  # runs of the quick scale: none on disk
    assert rows.iloc[2]["data"] == "none recorded"
    # each count of the report's scale opens the ledger's table in the report (its key there: the path from the
    # workflow's directory); another scale's table is not in the report
    opens = "app.setView({navbarMode:'resultinfo',resultPath:'results/smoke/claims/fedvr.html',content:'html'"
    assert page.count(opens) == 6 and page.count("javascript:") == 6


def test_the_front_page_names_a_pass_at_a_reduced_scale_that_the_paper_scale_does_not_find(tmp_path):
    _ledger(Layout("quick", tmp_path).ledger("fedvr"), "quick")  # C1 PASS
    _ledger(Layout("paper", tmp_path).ledger("fedvr"), "paper")
    page = publish_parts(str(Overview(tmp_path, "quick")), writer="html")["html_body"]
    assert "not at the paper scale" not in page  # the same verdicts at both
    at_paper = pd.read_csv(Layout("paper", tmp_path).ledger("fedvr"))
    at_paper.assign(status=["PASS", "INCONCLUSIVE", "FAIL", "INCONCLUSIVE"]).to_csv(
        Layout("paper", tmp_path).ledger("fedvr"), index=False)
    seal(Layout("paper", tmp_path).ledger("fedvr"))  # as rule claims wrote it at the paper scale
    page = publish_parts(str(Overview(tmp_path, "quick")), writer="html")["html_body"]
    assert "not at the paper scale" in page and "fedvr</tt> at quick: C1." in page


def test_a_figure_page_gives_what_its_runs_ran_on_and_only_its_claims(fedvr_on_disk, tmp_path):
    root, out, figure, table = fedvr_on_disk
    page = tmp_path / "fig3.html"
    write_figure_page(figure, out.figure("fedvr", "fig3", "png"), out.ledger("fedvr"), out.results, page,
                      table.method_names("fedvr"))
    text = page.read_text()
    assert "data:image/png;base64," in text and "0123456*" in text and "505c1cbc2e63" in text
    assert "torch 2.13.0+cpu" in text and "SVRG is faster" in text and "SVRG has less variance" in text
    assert "three algorithms" not in text  # C3 reads fig9 only
    assert "C0 (implementation)" in text and "depends (r=a: PASS)" in text  # rendered from the fields
    assert "FedAvg-SVRG (ours) 0.001 vs FedAvg of [15] 0.01" in text  # method keys in plain words
    # for a reader new to it: the caption the figure's title points to, how this scale differs from the paper, the
    # columns' meaning and the ledger table's names for them; no table with an empty header row
    assert html.escape(figure.caption) in text and "Unlike the paper at this scale: rounds = " in text
    assert "What the columns mean" in text and "<th>across readings</th>" in text and "<tr><th></th>" not in text
    assert report_group(figure) == "Monte Carlo statistics"


# Snakemake's report of a small workflow with the project's front page (workflow/report/workflow.rst) and a rule
# graph of as many steps as the project's, the last the ledger's table; the page as Snakemake's template lays it out
STEPS = ["download", "prepare", "train", "aggregate", "claims", "plot", "figure_page", "audit_paper", "fedvr"]
SNAKEFILE = f"""from pathlib import Path
from fedrepro.report_pages import Overview

report: "{REPO}/workflow/report/workflow.rst"
config["overview"] = Overview(Path("."), "smoke")
STEPS = {STEPS}
TABLE = "results/smoke/claims/fedvr.html"

rule all:
    input: TABLE

for step, after in zip(STEPS, [None, *STEPS]):
    rule:
        name: step
        input: [f"steps/{{after}}"] if after else []
        output: f"steps/{{step}}"
        shell: "touch {{output}}"

rule claims_table:
    input: f"steps/{{STEPS[-1]}}"
    output: report(TABLE, category="fedvr", subcategory="claims", labels={{"figure": "claims ledger"}})
    shell: "touch {{output}}"
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    _ledger(Layout("smoke", root).ledger("fedvr"), "smoke")
    (root / "Snakefile").write_text(SNAKEFILE)
    run(BIN / "snakemake", "--cores", "1", "--quiet", cwd=root)
    write_ledger_html(Layout("smoke", root).ledger("fedvr"), Layout("smoke", root).ledger("fedvr", "html"), "fedvr")
    run(BIN / "snakemake", "--cores", "1", "--report", "report.html", cwd=root)
    return root / "report.html"


# the front page's text and tables, and the rule graph, as boxes [left, top, right, bottom] in the window
BOXES = """setTimeout(() => {
  const box = el => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const text = document.querySelectorAll(".fedrepro-front p, .fedrepro-front li, .fedrepro-front table");
  const graph = document.querySelector("#rulegraph svg, #rulegraph canvas");
  const pre = document.createElement("pre");
  pre.id = "probe";
  const paragraphs = [...document.querySelectorAll(".fedrepro-front p")].map(box);
  pre.textContent = JSON.stringify({width: innerWidth, text: [...text].map(box), paragraphs, graph: graph && box(graph)});
  document.body.appendChild(pre);
}, 3000);"""


@needs_chromium
@pytest.mark.parametrize("width", [1280, 1920])
def test_the_front_pages_text_and_the_rule_graph_do_not_overlap_in_a_browser(report, width):
    """Snakemake's own layout drew the rule graph over the verdict table, which overflowed its column; the
    front page's style lets the text take its width and puts the graph beside it or below."""
    boxes = json.loads(probed(report, BOXES, size=f"{width},1000"))
    graph, text = boxes["graph"], boxes["text"]
    assert graph and graph[2] - graph[0] > 50 and len(text) >= 6, boxes  # drawn; paragraphs, the table, the notes
    overlaps = [b for b in text if b[0] < graph[2] and graph[0] < b[2] and b[1] < graph[3] and graph[1] < b[3]]
    assert overlaps == [], f"at {width} px the rule graph {graph} overlaps the text at {overlaps}"
    column = max(b[2] for b in boxes["paragraphs"])
    assert all(b[2] <= column + 1 for b in text), boxes  # nothing spills out of the text's column (the table did)
    assert all(0 <= b[0] and b[2] <= boxes["width"] and b[1] >= 0 for b in [*text, graph]), boxes  # all in view


# a click on the front page's first count, then the page the report shows (its iframe's data: URI) and the menu
CLICK = """setTimeout(() => {
  const count = document.querySelector(".fedrepro-front td a");
  count.click();
  setTimeout(() => {
    const shown = document.querySelector("iframe");
    const pre = document.createElement("pre");
    pre.id = "probe";
    pre.textContent = JSON.stringify({count: count.textContent, shown: shown ? atob(shown.src.split(",")[1]) : "",
                                      menu: document.body.innerText});
    document.body.appendChild(pre);
  }, 1000);
}, 3000);"""


@needs_chromium
def test_a_count_on_the_front_page_opens_the_ledgers_table_in_a_browser(report):
    clicked = json.loads(probed(report, CLICK))
    assert clicked["count"] == "1"  # fedvr's PASS of the paper's claims
    assert "<h3>Claims ledger of fedvr (scale smoke)</h3>" in clicked["shown"], clicked["shown"][:500]
    assert "claims ledger" in clicked["menu"].lower()  # the table's entry, in place of the menu


@needs_chromium
def test_a_figure_page_renders_its_provenance_and_claims_in_a_browser(fedvr_on_disk, tmp_path):
    root, out, figure, table = fedvr_on_disk
    page = tmp_path / "fig3.html"
    write_figure_page(figure, out.figure("fedvr", "fig3", "png"), out.ledger("fedvr"), out.results, page)
    dom = rendered_dom(page)
    assert "<h3>Provenance</h3>" in dom and "<h3>Claims that read this figure</h3>" in dom
    assert dom.count('class="PASS"') == 2 and dom.count('class="FAIL"') == 1  # C0 (implementation), C1; C2


def test_the_claims_table_leads_with_the_quote_and_verdict_in_plain_words(tmp_path):
    _ledger(tmp_path / "fedvr.csv", "smoke")
    page = ledger_html(pd.read_csv(tmp_path / "fedvr.csv"), "t", names={"fedavg_svrg": "FedAvg-SVRG",
                                                                          "fedavg_prob": "FedAvg of [15]"})
    headers = _table(page).columns.tolist()
    assert headers[:5] == ["claim (the paper's words)", "verdict", "why open or failed", "seeds needed",
                           "across readings"]
    rows = _table(page).set_index("id")
    assert rows.loc["C3", "why open or failed"] == "seeds" and rows.loc["C3", "seeds needed"] == "7"
    assert rows.loc["C2", "across readings"] == "depends (r=a: PASS)"  # rendered from the fields
    assert "FedAvg-SVRG 0.001 vs FedAvg of [15] 0.01" in page and "fedavg_svrg" not in page
    assert "-0.2 (2.5 sd)" in page and "width: 1380px" in page  # a narrower frame scrolls, never squeezes
    assert "p pass" not in headers and "equivalence margin" not in headers  # empty in every row: left out
    # every column shown is explained above the table, in the order of the table
    legend = html.unescape(page[page.index("What the columns mean"):page.index("<table")])
    terms = [t.split("</dt>")[0].removesuffix(":") for t in legend.split("<dt>")[1:]]
    assert terms == headers and "PASS: our results show the claim" in legend
    assert "<dt>support:</dt><dd>of a check without a test: the share of bootstrap resamples" in legend
