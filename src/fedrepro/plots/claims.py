"""The claims figure of a paper (figures/<paper>/claims.{pdf,png}): one row per claim, how firmly the data
show it holds as a bar (1 - p_pass for a tested check, the bootstrap support for the others), the PASS
threshold of claims/support.py marked, the verdict as colour with the cause of an open or failed one, the
claims grouped by the figures they are judged on. It reads the ledger's fields (kind, cause, robustness),
not its text."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from fedrepro.claims.causes import SEEDS
from fedrepro.claims.kinds import DERIVED, IMPLEMENTATION, REPORT
from fedrepro.claims.robustness import DEPENDS
from fedrepro.plots.common import plt, save_pdf_png, theme
from fedrepro.verdicts import VERDICTS

COLOURS = dict(zip(VERDICTS, ("#2a9d55", "#c0392b", "#9a9a9a")))


KIND_MARKS = {DERIVED: " derived", IMPLEMENTATION: " impl.", REPORT: " report"}


def field(row: pd.Series, name: str) -> str:
    """A text field of a ledger row ("" where the ledger lacks it or leaves it empty)."""
    value = row.get(name, "")
    return value if isinstance(value, str) else ""


def tick_label(row: pd.Series) -> str:
    """"C5a [INCONCLUSIVE: seeds]", "C10 [PASS] impl.": the verdict, its cause, and a kind other than the paper's."""
    cause = field(row, "cause")
    return f"{row['claim_id']} [{row['status']}{': ' + cause if cause else ''}]" + KIND_MARKS.get(field(row, "kind"), "")


def claims_figure(ledger: pd.DataFrame, paper: str, scale: str, decide: float) -> plt.Figure:
    """Bars of 1 - p_pass (a tested check) or `support` (a share of resamples) for each row of the ledger; a
    claim without either says why (n/a, or too few seeds) in place of a bar. `decide`: what a PASS needs
    (1 - alpha, and the share of resamples a bootstrapped verdict needs)."""
    theme()
    rows = ledger.assign(group=ledger["figure"].fillna("").replace("", "(no figure)"))
    order = list(dict.fromkeys(rows["group"]))  # groups in the order the claims file first names them
    rows = rows.assign(rank=rows["group"].map(order.index)).sort_values("rank", kind="stable").reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(7.5, 0.8 + 0.24 * len(rows)))
    p_pass = pd.to_numeric(rows.get("p_pass", pd.Series(math.nan, index=rows.index)), errors="coerce")
    firm = (1 - p_pass).fillna(pd.to_numeric(rows["support"], errors="coerce"))
    for i, row in rows.iterrows():
        colour = COLOURS.get(row["status"], "black")
        if not math.isnan(firm[i]):
            ax.barh(i, firm[i], color=colour, height=0.7)
            ax.text(min(firm[i], 0.86) + 0.01, i, f"{firm[i]:.0%}", va="center", fontsize=6)
        else:
            why = ("too few seeds" if field(row, "cause") == SEEDS else "shown, not judged" if field(row, "kind") == REPORT
                   else "n/a")
            ax.text(0.01, i, f"{why} ({row['status']})", va="center", fontsize=6, color=colour, style="italic")
    ax.axvline(decide, color="black", linestyle="--", linewidth=0.8)
    starts = rows.groupby("rank").head(1).index
    for start in starts[1:]:
        ax.axhline(start - 0.5, color="0.6", linewidth=0.6)
    for start, group in zip(starts, order):
        ax.text(1.02, start, group, va="center", fontsize=6, transform=ax.get_yaxis_transform())
    depends = [field(row, "robustness") == DEPENDS for _, row in rows.iterrows()]  # flips under an alternative
    ax.set_yticks(range(len(rows)), [tick_label(row) + (" depends" if d else "")
                                     for (_, row), d in zip(rows.iterrows(), depends)], fontsize=6)
    for tick, status in zip(ax.get_yticklabels(), rows["status"]):
        tick.set_color(COLOURS.get(status, "black"))
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"1 - p_pass (tested checks) or share of bootstrap resamples in which the claim holds; PASS needs "
                  f">= {decide:.0%}" + ("; depends: the verdict flips under an alternative reading"
                                        if any(depends) else "") + "\n[verdict: cause]; impl.: implementation check, "
                  "report: shown, not judged (neither in the paper's count)", fontsize=7)
    ax.set_title(f"{paper}: claims and how solid their verdicts are [scale: {scale}]", fontsize=9)
    fig.tight_layout()
    return fig


def draw_claims_figure(ledger_path: Path, paper: str, decide: float, pdf: Path, png: Path) -> None:
    ledger = pd.read_csv(ledger_path)
    scale = str(ledger["scale"].iloc[0]) if len(ledger) else "?"
    fig = claims_figure(ledger, paper, scale, decide)
    save_pdf_png(fig, pdf, png, f"{paper} claims", f"How firmly the data show each claim of {paper} at scale {scale}.")
