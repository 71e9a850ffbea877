"""docs/papers/<paper>.md: the parts generated from the configuration are current, and `fedrepro docs` rewrites only
the generated parts (the figures from the configuration; the expected results, from the reference beside the page:
tests/pipeline/test_expected.py)."""

import json
import re
import shutil
from pathlib import Path

import pandas as pd

from fedrepro.claim_card import reason
from fedrepro.claims import causes
from fedrepro.paper_docs import CARD, COSTS, current_part, hand_written, run_tables, write_docs
from fedrepro.schemas import known_papers

REPO = Path(__file__).resolve().parents[2]


def test_every_papers_page_shows_what_the_configuration_gives():
    assert write_docs(known_papers(), REPO / "docs" / "papers", check=True, root=REPO) == []


def test_a_title_edit_makes_its_page_stale_and_docs_rewrites_only_the_generated_parts(tmp_path):
    shutil.copytree(REPO / "config", tmp_path / "config")
    shutil.copytree(REPO / "benchmarks" / "records", tmp_path / "benchmarks" / "records")
    shutil.copytree(REPO / "docs" / "papers", tmp_path / "docs")
    paper = tmp_path / "config" / "papers" / "fedvr.yaml"
    paper.write_text(paper.read_text().replace('title: "Fig. 9: three algorithms', 'title: "Fig. 9: the three'))
    page = tmp_path / "docs" / "fedvr.md"
    verdicts = tmp_path / "docs" / "fedvr" / "verdicts.md"
    before, before_verdicts = page.read_text(), verdicts.read_text()
    assert write_docs(["fedvr"], tmp_path / "docs", check=True, root=tmp_path) == [str(verdicts)]
    assert page.read_text() == before and verdicts.read_text() == before_verdicts  # --check writes nothing

    write_docs(["fedvr"], tmp_path / "docs", root=tmp_path)
    assert "| fig9 | Fig. 9: the three" in verdicts.read_text()
    assert hand_written(page.read_text()) == hand_written(before)  # the page's own text is kept
    assert write_docs(["fedvr"], tmp_path / "docs", check=True, root=tmp_path) == []


# a verdict count or a decided share: "7 PASS", "11 of 17 (65%)", "16 of 20 claims"
COUNT = re.compile(r"\b\d+ (PASS|FAIL|INCONCLUSIVE)\b|\b\d+ of \d+ \(\d+%\)|\b\d+ of \d+ (paper )?claims\b")


def test_no_verdict_count_is_written_by_hand():
    """Counts come from the reference ledgers (the generated parts of the paper pages, the report), never from
    prose that drifts from them."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    found = [f"{page.relative_to(REPO)}: {m.group(0)!r}" for page in pages
             for m in COUNT.finditer(hand_written(page.read_text()))]
    assert not found, "verdict counts written by hand (generate them or remove them):\n" + "\n".join(found)


def test_hand_written_drops_every_generated_part_and_keeps_the_rest():
    page = ("intro 3 PASS\n<!-- generated: figures (`fedrepro docs` writes it; do not edit by hand) -->\n"
            "7 PASS\n<!-- end of generated: figures -->\nmiddle\n"
            "<!-- generated: expected (`fedrepro docs` writes it; do not edit by hand) -->\n1 FAIL\n"
            "<!-- end of generated: expected -->\nend")
    assert hand_written(page) == "intro 3 PASS\n\nmiddle\n\nend"


def test_every_papers_page_opens_with_its_claim_card():
    """A reader finds each claim's verdict before any reading: the card stands before the page's first section,
    one line per claim of the paper, each linked to its full row."""
    for paper in known_papers():
        text = (REPO / "docs" / "papers" / f"{paper}.md").read_text()
        card = current_part(text, CARD)
        assert card is not None, f"{paper}.md has no claim card"
        assert text.index("<!-- generated: card") < text.index("\n## "), f"{paper}.md: the card is not at the top"
        rows = (REPO / "docs" / "papers" / paper / "verdicts.md").read_text()
        links = re.findall(rf"\]\({paper}/verdicts\.md#([\w-]+)\)", card)
        assert links, f"{paper}.md: the card links to no row"
        for link in links:
            assert f'<a id="{link}"></a>' in rows, f"{paper}.md: the card links to {link}, which is no row"


def test_a_page_without_its_card_is_stale(tmp_path):
    shutil.copytree(REPO / "config", tmp_path / "config")
    shutil.copytree(REPO / "benchmarks" / "records", tmp_path / "benchmarks" / "records")
    shutil.copytree(REPO / "docs" / "papers", tmp_path / "docs")
    page = tmp_path / "docs" / "tdcd.md"
    page.write_text(re.sub(r"<!-- generated: card.*?end of generated: card -->\n", "", page.read_text(), flags=re.S))
    assert str(page) in write_docs(["tdcd"], tmp_path / "docs", check=True, root=tmp_path)
    write_docs(["tdcd"], tmp_path / "docs", root=tmp_path)
    assert page.read_text().index("<!-- generated: card") < page.read_text().index("\n## ")


# a cost or time a reader compares between pages: "6.7 H200-hours", "100-300 GPU-hours", "~17 min"
COST = re.compile(r"\b[\d.,]+(-[\d.,]+)? (H100-|H200-|GPU-)hours\b|~\d+ min")


def test_no_cost_is_written_by_hand_in_the_readme_or_a_papers_page():
    """The README's costs and each page's come from one source (scale_costs.py): prose cannot disagree with them."""
    pages = [REPO / "README.md", *sorted((REPO / "docs" / "papers").glob("*.md"))]
    found = [f"{page.relative_to(REPO)}: {m.group(0)!r}" for page in pages
             for m in COST.finditer(hand_written(page.read_text()))]
    assert not found, "costs written by hand (generate them or remove them):\n" + "\n".join(found)


def test_the_readme_and_each_page_give_the_same_costs():
    readme = current_part((REPO / "README.md").read_text(), COSTS)
    for paper in known_papers():
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{paper}` |"))
        quick, at_paper = [c.strip() for c in row.strip("|").split("|")[1:]]
        line = current_part((REPO / "docs" / "papers" / f"{paper}.md").read_text(), COSTS)
        assert f"`quick`: {quick} " in line and f"The paper scale: {at_paper} " in line, (paper, row, line)


def _row(**fields):
    return pd.Series({"status": "INCONCLUSIVE", "cause": "", "check_says": "", "departs": "", "measured": "",
                      "note": "", "seeds_needed": "", "scale": "quick"} | fields)


def test_the_cards_reason_says_what_the_row_rests_on():
    assert reason(_row(cause=causes.DATA, check_says="PASS")) == "needs the real dataset; on the stand-in it holds"
    assert reason(_row(status="PASS", measured="12/12 cells hold: ...")) == "holds in 12/12 cells"
    assert reason(_row(status="PASS", measured="1/1 cells hold", departs="at quick: target 37%")) == \
        "holds in 1/1 cells; at quick: target 37%"
    assert reason(_row(cause=causes.SEEDS, seeds_needed="7")) == "about 7 seeds would decide it"
    unjudged = _row(status="FAIL", cause=causes.READING, note="Not yet the paper's FAIL: alternative readings ...")
    assert "not yet run" in reason(unjudged)
    long = _row(cause=causes.SCALE, note="not decided at the quick scale (the check alone says FAIL): " + "word " * 30)
    assert len(reason(long).split()) <= 16  # 15 words and the ellipsis


def test_every_papers_page_stays_under_2500_words():
    """A paper's page is its card, its figures and its readings: the verdicts in full and the settings at every
    scale live on its verdicts page, the project's history in docs/ and git."""
    for paper in known_papers():
        words = len((REPO / "docs" / "papers" / f"{paper}.md").read_text().split())
        assert words < 2500, f"docs/papers/{paper}.md has {words} words"


def test_each_figure_on_a_page_stands_under_the_papers_caption(tmp_path):
    """The reader sets our figure against the paper's: its caption, word for word, directly above our image; an edit
    of the caption in the configuration reaches the page."""
    shutil.copytree(REPO / "config", tmp_path / "config")
    shutil.copytree(REPO / "benchmarks" / "records", tmp_path / "benchmarks" / "records")
    shutil.copytree(REPO / "docs" / "papers", tmp_path / "docs")
    paper = tmp_path / "config" / "papers" / "fedvr.yaml"
    paper.write_text(paper.read_text().replace("Figure 9: Comparing", "Figure 9: Comparing (edited)"))
    write_docs(["fedvr"], tmp_path / "docs", root=tmp_path)
    lines = (tmp_path / "docs" / "fedvr.md").read_text().splitlines()
    image = lines.index("![fig9 at quick](fedvr/quick/fig9.png)")
    assert lines[image - 2].startswith("> *The paper's caption:* Figure 9: Comparing (edited) the results")
    assert sum(line.startswith("> *The paper's caption:* Figure 9:") for line in lines) == 1  # once, not per scale


def test_each_cards_gpu_hours_are_its_own_in_the_readme_and_performance(tmp_path):
    """With records of two cards, each paper's GPU cost is given per card, each from that card's records only, and
    docs/performance.md shows each card's plan (`fedrepro cost --gpus 1 --gpu CARD`): no figure adds two cards."""
    from fedrepro.results.gpu_cost import RECORDS
    from fedrepro.scale_costs import RECORD, performance_part, readme_part, scale_costs

    (tmp_path / RECORDS).parent.mkdir(parents=True)
    shutil.copy(REPO / RECORD, tmp_path / RECORD)
    h200 = (REPO / RECORDS).read_text()
    h100 = json.loads(h200.splitlines()[0]) | {"card": "NVIDIA H100 80GB HBM3"}  # FedCluster M = 10 only
    (tmp_path / RECORDS).write_text(h200 + json.dumps(h100) + "\n")
    costs = scale_costs(run_tables(REPO / "config")["paper"].runs, tmp_path)
    fedcluster = costs.papers["fedcluster"].paper
    assert "H200-hours (60 runs x 5 seeds)" in fedcluster and "H100-hours" in fedcluster
    h100_cell = fedcluster.split("; ")[0]  # the H100 has a rate for M = 10 only: its other runs are left out
    assert "H100-hours" in h100_cell and "alexnet runs (no measured rate)" in h100_cell
    assert "H200" in readme_part(costs) and list(costs.plans) == ["h100", "h200"]
    part = performance_part(costs)
    assert "--gpu h100`" in part and "#### GPU plan: 1 H100 GPU" in part and "#### GPU plan: 1 H200 GPU" in part


def test_performance_quotes_the_readmes_gpu_hours():
    """docs/performance.md's current cost is the generated plan whose totals the README's cells are."""
    readme = current_part((REPO / "README.md").read_text(), COSTS)
    plan = current_part((REPO / "docs" / "performance.md").read_text(), COSTS)
    assert plan and "`fedrepro cost --scale paper --gpus 1 --gpu h200`" in plan
    for paper in ("fedcluster", "defedavg", "tdcd"):
        cell = next(line for line in readme.splitlines() if line.startswith(f"| `{paper}` |"))
        hours = float(re.search(r"GPU: ([\d,.]+) H200-hours", cell).group(1).replace(",", ""))
        row = next(line for line in plan.splitlines() if line.startswith(f"| {paper} |"))
        assert round(float(row.split("|")[5]), 0 if hours >= 100 else 1) == hours, (cell, row)
