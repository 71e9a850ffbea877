"""A paper claim quotes the paper (claims/quotes.py): each part of its quote is in the paper's text."""

import pytest

from fedrepro.claims.kinds import PAPER, kind_of
from fedrepro.claims.quotes import unquoted, words
from fedrepro.utils.yaml_file import read_yaml
from tests.pipeline.project_dir import REPO

PAPERS = REPO.parent / "shared" / "papers"
NAMES = sorted(p.stem for p in (REPO / "config" / "claims").glob("*.yaml"))


def test_formulas_drop_out_on_both_sides():
    """The texts repeat each formula as symbols and LaTeX: only the words around it are compared."""
    text = "we increase from K=10𝐾10K=10italic_K = 10 to K=20𝐾20K=20italic_K = 20 clients, resulting in more"
    assert words(text) == ["we", "increase", "from", "to", "clients", "resulting", "in", "more"]
    assert unquoted("we increase from K = 10 to K = 20 clients ... resulting in more (§5.3.2)", text) == []
    assert unquoted("we increase ... from K = 10 to K = 20 users", text) == ["from K = 10 to K = 20 users"]


@pytest.mark.parametrize("paper", NAMES)
def test_each_paper_claim_quotes_the_papers_words(paper):
    """A paraphrase in `quote` reads as the paper's sentence on the claim card: every paper claim's quote is the
    paper's words, "..." between the parts it leaves out."""
    if not PAPERS.is_dir():
        pytest.skip(f"no paper texts at {PAPERS}")
    text = (PAPERS / read_yaml(REPO / "config" / "papers" / f"{paper}.yaml")["paper_file"]).read_text()
    claims = read_yaml(REPO / "config" / "claims" / f"{paper}.yaml")["claims"]
    missing = {c["id"]: parts for c in claims if kind_of(c) == PAPER and (parts := unquoted(c["quote"], text))}
    assert not missing, f"quotes not in the paper's text: {missing}"


@pytest.mark.parametrize("paper", NAMES)
def test_each_figure_carries_the_papers_own_caption(paper):
    """The page sets the paper's caption above our figure: every figure of the paper has one, in the paper's words,
    and one the paper does not have (`in_paper: false`) has none."""
    if not PAPERS.is_dir():
        pytest.skip(f"no paper texts at {PAPERS}")
    config = read_yaml(REPO / "config" / "papers" / f"{paper}.yaml")
    text = (PAPERS / config["paper_file"]).read_text()
    captions = {name: fig.get("paper_caption", "") for name, fig in config["figures"].items()}
    ours = {name for name, fig in config["figures"].items() if not fig.get("in_paper", True)}
    assert [name for name, caption in captions.items() if not caption] == sorted(ours, key=list(captions).index)
    assert not {name: parts for name, caption in captions.items() if (parts := unquoted(caption, text))}
