"""A paper claim's `quote` is the paper's own words (docs/claims.md, "Kinds of claim"): each part of it, between
"..." elisions, appears in the paper's text. The comparison is on words of letters only, because the texts carry
their formulas twice over (rendered symbols, then LaTeX: "K=50𝐾50K=50italic_K = 50"): a token with a digit, a
non-ASCII letter, an underscore or a backslash is a formula's and is dropped on both sides, as are one-letter
words; a closing reference in brackets, "(§5.3.2, Fig. 9)", says where and is not part of the words."""

from __future__ import annotations

import re

_WHERE = re.compile(r"\s*\([^()]*(§|Fig|Theorem|Table|App\.|Sec\.|Eq\.)[^()]*\)\s*$")
_TYPOGRAPHY = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "–": "-", "—": "-", "…": "...", "\xa0": " "})
_TIE = "Β\xa0"  # fedvr's text renders LaTeX's tie "~" ("of~[15]") as a stray capital beta and a no-break space


def words(text: str) -> list[str]:
    """The words of `text` that a quote and the paper's text share, formulas left out, lower case."""
    kept = []
    for token in text.replace(_TIE, " ").translate(_TYPOGRAPHY).split():
        if re.search(r"[\d_\\]|[^\x00-\x7f]", token):
            continue
        word = re.sub(r"[^A-Za-z]", "", token).lower()
        if len(word) > 1:
            kept.append(word)
    return kept


def unquoted(quote: str, paper_text: str) -> list[str]:
    """The parts of `quote` (split at "...") whose words do not appear, in order and together, in `paper_text`."""
    text = f" {' '.join(words(paper_text))} "
    parts = _WHERE.sub("", quote.translate(_TYPOGRAPHY)).split("...")
    return [part.strip() for part in parts if words(part) and f" {' '.join(words(part))} " not in text]
