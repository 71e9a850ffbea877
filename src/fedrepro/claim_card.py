"""The claim card at the top of each paper's page (docs/papers/<paper>.md): one line per claim of the paper, its
words, where it stands in the paper, and at each scale with a committed reference the verdict as a symbol and a
word with a plain reason of at most REASON_WORDS words, linked to the claim's full row below. It is generated from
the reference ledgers (paper_docs.py writes it), so it cannot say more than they do: the reason comes from the
row's own fields (cause, check_says, departs, robustness, seeds_needed, measured) and, where the ledger keeps them
only in its note, the reason a scale was declared undecided and the stand-ins' labels."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pandas as pd

from fedrepro.claims import causes
from fedrepro.claims.kinds import PAPER, kinds_of
from fedrepro.claims.robustness import DEPENDS, decode
from fedrepro.claims.table import VERDICT_WORDS
from fedrepro.verdicts import FAIL, INCONCLUSIVE, PASS

SYMBOLS = {PASS: "✅", FAIL: "❌", INCONCLUSIVE: "⬜"}
QUOTE_WORDS, PART_WORDS, REASON_WORDS = 20, 8, 15
# where a claim stands in the paper, as its quote names it: a section, theorem, figure, table or appendix
WHERE = re.compile(r"(§\s?[\dA-Z.]+|Theorem \d+|Figs?\.? ?[\d-]+|Figures? [\d, and-]+\d|Table [IVX\d]+|App\. [A-Z.\d]+)")
BESIDE_PAPER = re.compile(r"(\d[\d.e+-]*) \(paper (\d[\d.e+-]*)")  # "0.00577 (paper 0.0029": ours, then the paper's
HELD = re.compile(r"^(\d+)/(\d+) (cells|pairs|runs|panels|steps|comparisons)")


def words(text: str, most: int) -> str:
    """`text` cut to `most` words, with an ellipsis where it was cut."""
    cut = str(text).split()
    return " ".join(cut[:most]) + (" …" if len(cut) > most else "")


def where(claim: dict[str, Any], titles: dict[str, str]) -> str:
    """Where the claim's sentence stands and what it is judged on: its `section`, else what its quote names; then
    the paper's figures it reads (their titles up to the colon: "Fig. 3")."""
    named = [claim["section"]] if claim.get("section") else [m.strip() for m in WHERE.findall(str(claim.get("quote", "")))]
    read = [titles[f].split(":")[0] for f in claim.get("figures", []) if f in titles]
    named, read = list(dict.fromkeys(named)), [f for f in dict.fromkeys(read) if f not in named]
    if not named:
        return f"judged on {', '.join(read)}" if read else "-"
    return ", ".join(named) + (f" (on {', '.join(read)})" if read else "")


def said(claim: dict[str, Any], previous: dict[str, Any] | None, repeated: bool) -> str:
    """The paper's words; for a sentence that several claims split (`repeated`), what each part tests: with the
    sentence, or under a ditto where the row above has the same sentence."""
    if not repeated:
        return words(claim.get("quote", ""), QUOTE_WORDS)
    part = "this part: " + words(claim.get("expected", ""), PART_WORDS)
    if previous is not None and previous.get("quote") == claim.get("quote"):
        return "〃 " + part
    return f"{words(claim.get('quote', ''), QUOTE_WORDS)} — {part}"


def _held(measured: str) -> str:
    """"12/12 cells" from a measured text that opens so; "" otherwise."""
    found = HELD.match(str(measured))
    return f"{found.group(1)}/{found.group(2)} {found.group(3)}" if found else ""


def _undecided_reason(note: str) -> str:
    found = re.search(r"not decided at the \w+ scale \(the check alone says \w+\): ([^.]*)", str(note))
    return found.group(1) if found else ""


def reason(row: pd.Series) -> str:
    """Why the row reads as it does, in at most REASON_WORDS plain words."""
    status, cause, departs = row["status"], row.get("cause", ""), str(row.get("departs", "") or "")
    held = _held(row.get("measured", ""))
    if status == PASS:
        text = f"holds in {held}" if held else "holds"
        if departs:
            text += f"; {departs}"
    elif cause == causes.DATA:
        said = {PASS: "holds", FAIL: "fails", INCONCLUSIVE: "open"}.get(row.get("check_says", "") or INCONCLUSIVE)
        text = f"needs the real dataset; on the stand-in it {said}" if said != "open" else \
            "needs the real dataset; open on the stand-in too"
    elif cause == causes.READING:
        # a FAIL only by alternatives not judged, or one that flips; an open verdict by a definition of ours
        flips = [a for a in decode(row.get("alternatives", "")) if a.flips]
        text = ("flips under " + ", ".join(f"{a.name}: {a.verdict}" for a in flips) if row.get("robustness") == DEPENDS
                else "fails under our readings; alternative readings not yet run (READINGS=all)" if status == FAIL
                else "rests on a definition of ours the paper leaves open")
    elif cause == causes.PAPER:
        text = f"fails ({held} hold) under every reading" if held else "fails under every reading"
    elif cause == causes.SEEDS:
        needed = str(row.get("seeds_needed", ""))
        text = f"about {needed} seeds would decide it" if needed.isdigit() else "more seeds needed; no estimate"
    elif cause == causes.SCALE:
        why = _undecided_reason(row.get("note", ""))
        text = f"not shown at {row['scale']}: {why}" if why else f"the {row['scale']} scale cannot show it"
    elif cause == causes.CHECK:
        measured = str(row.get("measured", ""))
        text = ("the runs end before reaching the target" if "reach" in measured or "censored" in measured
                else "the metric sits below its floor: not learned yet" if "floor" in measured
                else "no effect either way: more than 50 seeds would be needed"
                if row.get("seeds_needed") == causes.NOT_WITHIN_REACH
                else "the check cannot decide on these runs")
    else:
        text = str(cause or status).lower()
    if status != PASS and departs and cause not in (causes.DATA,):
        text += f"; {departs}"
    return words(text, REASON_WORDS)


def verdict_cell(row: pd.Series, link: str) -> str:
    """"✅ [PASS](fedvr/verdicts.md#quick-c1a): holds in 12/12 cells", the word linked to the claim's full row, and
    the paper's numbers beside ours where the measured value gives them."""
    cause = f" ({row['cause']})" if row.get("cause") else ""
    pairs = BESIDE_PAPER.findall(str(row.get("measured", "")))[:2]
    beside = "; " + ", ".join(f"ours {o} vs the paper's {p}" for o, p in pairs) if pairs else ""
    return f"{SYMBOLS[row['status']]} [{row['status']}{cause}]({link}): {reason(row)}{beside}"


def anchor(scale: str, claim_id: str) -> str:
    return f"{scale}-{claim_id}".lower()


def stand_ins(ledger: pd.DataFrame) -> list[str]:
    """The stand-ins a ledger's notes say its claims were judged on (claims/data_notes.py)."""
    return sorted({label for note in ledger.get("note", pd.Series(dtype=str)).fillna("")
                   for found in re.findall(r"Data: ([^.]*)\.", str(note)) for label in found.split("; ")})


def data_line(ledgers: dict[str, pd.DataFrame]) -> str:
    """On what data each scale's verdicts were judged: the paper's datasets, but the stand-ins the notes name."""
    stand = {scale: stand_ins(ledger) for scale, ledger in ledgers.items()}
    if not any(stand.values()):
        return "Judged on the paper's datasets."
    return " ".join(f"`{s}`: judged on the paper's datasets, except {'; '.join(v)}." if v else
                    f"`{s}`: judged on the paper's datasets." for s, v in stand.items())


def card(ledgers: dict[str, pd.DataFrame], claims: list[dict[str, Any]], titles: dict[str, str], rows: str) -> str:
    """The card: a line per paper claim (in the claims file's order), a column per scale with a reference, each
    verdict linked to its full row on the page `rows`."""
    scales = list(ledgers)
    by_scale = {s: ledgers[s][kinds_of(ledgers[s]) == PAPER].set_index("claim_id") for s in scales}
    lines = ["### Does each claim hold?", "",
             data_line(ledgers) + " Reduced scales run fewer clients, rounds or samples than the paper (section "
             "\"Reduced scales\").",
             "", "| claim | the paper says | where | " + " | ".join(f"at `{s}`" for s in scales) + " |",
             "|---|---|---|" + "---|" * len(scales)]
    listed = [c for c in claims if any(c["id"] in by_scale[s].index for s in scales)]
    quotes = Counter(c.get("quote") for c in listed)
    for i, claim in enumerate(listed):
        shown = [s for s in scales if claim["id"] in by_scale[s].index]
        quote = said(claim, listed[i - 1] if i else None, quotes[claim.get("quote")] > 1)
        cells = [verdict_cell(by_scale[s].loc[claim["id"]], f"{rows}#{anchor(s, claim['id'])}") if s in shown else "-"
                 for s in scales]
        lines.append(f"| {claim['id']} | {_cell(quote)} | "
                     f"{_cell(where(claim, titles))} | " + " | ".join(_cell(c) for c in cells) + " |")
    lines += ["", "Verdicts: " + "; ".join(f"{SYMBOLS[v]} {v}: {w.split(' (')[0]}" for v, w in VERDICT_WORDS.items())
              + ", and the reason says why.",
              "Causes (in brackets): " + "; ".join(f"`{c}`: {w}" for c, w in causes.CAUSES.items()) + ".",
              f"Each verdict links to its full row in [{rows}]({rows}); docs/claims.md says how a verdict is "
              "reached and the error rate it carries."]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|") or "-"
