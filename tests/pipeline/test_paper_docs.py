"""docs/papers/<paper>.md: the parts generated from the configuration are current, and `fedrepro docs` rewrites only
the generated parts (the figures from the configuration; the expected results, from the reference beside the page:
tests/pipeline/test_expected.py)."""

import re
import shutil
from pathlib import Path

from fedrepro.paper_docs import current_part, hand_written, write_docs
from fedrepro.schemas import known_papers

REPO = Path(__file__).resolve().parents[2]


def test_every_papers_page_shows_what_the_configuration_gives():
    assert write_docs(known_papers(), REPO / "docs" / "papers", check=True, root=REPO) == []


def test_a_title_edit_makes_its_page_stale_and_docs_rewrites_only_the_generated_parts(tmp_path):
    shutil.copytree(REPO / "config", tmp_path / "config")
    shutil.copytree(REPO / "docs" / "papers", tmp_path / "docs")
    paper = tmp_path / "config" / "papers" / "fedvr.yaml"
    paper.write_text(paper.read_text().replace('title: "Fig. 9: three algorithms', 'title: "Fig. 9: the three'))
    page = tmp_path / "docs" / "fedvr.md"
    before = page.read_text()
    assert write_docs(["fedvr"], tmp_path / "docs", check=True, root=tmp_path) == [str(page)]
    assert page.read_text() == before  # --check writes nothing

    write_docs(["fedvr"], tmp_path / "docs", root=tmp_path)
    after = page.read_text()
    assert "| fig9 | Fig. 9: the three" in current_part(after, "figures")
    hand_written = before.split("<!-- generated: figures")[0]
    assert after.startswith(hand_written)  # the page's own text is kept
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
