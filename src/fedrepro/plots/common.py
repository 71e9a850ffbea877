"""Styling and saving shared by all figures."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Iterator

import matplotlib

matplotlib.use("Agg")  # no display on pipeline machines
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.ticker import LogFormatter, MaxNLocator  # noqa: E402

from fedrepro.experiments.runtable import Figure  # noqa: E402
from fedrepro.layout import figure_record  # noqa: E402
from fedrepro.utils.atomic import atomic_path  # noqa: E402
from fedrepro.utils.digest import write_sha256s  # noqa: E402


def theme() -> None:
    sns.set_theme(style="whitegrid", context="paper", font_scale=1.0)


# The math the configuration and the plots write as plain text (titles, panels, labels, legends), as mathtext
# ("@" stands for the pattern's group); longest first, so that f(θ_k) − f* is one formula, not θ_k inside text.
MATH = [
    (r"f\(θ_k\) − f\*", r"$f(\theta_k) - f^\star$"),
    (r"f\(θ_k\)", r"$f(\theta_k)$"),
    (r"\|\|grad f\(x\^r\)\|\|", r"$\Vert\nabla f(x^r)\Vert$"),
    (r"ρ_(device|cluster)", r"$\rho_{\mathrm{@}}$"),
    (r"θ_\{?(\w)\}?", r"$\theta_{@}$"),
    (r"θ\*", r"$\theta^\star$"),
    (r"θ\^0", r"$\theta^0$"),
    (r"\bR\^(\d+)", r"$\mathbb{R}^{@}$"),
]
# x columns counted in whole steps: their ticks are integers (a short run would get 0.5, 1.5 ...)
COUNTED = ("round", "iteration")


def mathtext(text: str) -> str:
    for pattern, formula in MATH:
        text = re.sub(pattern, lambda m, f=formula: f.replace("@", m.group(1) if m.groups() else ""), text)
    return text


def scale_note(figure: Figure) -> str:
    # a scale without deviations (e.g. quick = paper for a small paper) is not reduced
    reduced = figure.scale != "paper" and figure.deviations
    return f"scale: {figure.scale}" + (" (reduced; see caption)" if reduced else "")


def stand_in_note(figure: Figure) -> str:
    """What a figure drawn from stand-in data says so in its title and files; "" for the real data."""
    return "STAND-IN DATA, not the paper's: " + "; ".join(figure.stand_ins) if figure.stand_ins else ""


def suptitle(fig: plt.Figure, figure: Figure, note: str) -> None:
    """The figure's title, then [its scale; `note`], then the stand-in data it shows, if any."""
    lines = [figure.title, f"[{scale_note(figure)}; {note}]", stand_in_note(figure)]
    fig.suptitle("\n".join(filter(None, lines)), fontsize=9, color="firebrick" if figure.stand_ins else "black")


def panel_name(figure: Figure, panel: str) -> str:
    """A panel's name, which the configuration writes in the paper's terms ("n = 10"), with the value this scale
    runs where its `values` map one: "n = 2 (paper 10)"."""
    for key, mapping in figure.values.items():
        for old, new in mapping.items():
            panel = re.sub(rf"\b{re.escape(key)} = {re.escape(f'{old:g}')}\b(?!\.)", f"{key} = {new:g} (paper {old:g})",
                           panel)
    return panel


def counted_x(ax: plt.Axes, x: str) -> None:
    """Integer ticks on an axis of rounds or iterations."""
    if x in COUNTED:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 2.5, 5, 10]))


class _PlainLogFormatter(LogFormatter):
    """Log-axis labels as plain numbers (2.3, 0.3, 0.01), not 2.3 x 10^0; LogFormatter still picks which
    minor ticks to label, so an axis spanning less than a decade is labelled at all."""

    def _num_to_string(self, x, vmin, vmax):
        return f"{x:g}"


def log_y(ax: plt.Axes) -> None:
    """A log y axis labelled in plain numbers."""
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(_PlainLogFormatter(labelOnlyBase=False))
    ax.yaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.4)))


def _kept_limits(values: pd.Series, diverged: pd.Series, log: bool) -> tuple[float, float] | None:
    """When a diverged seed's values would more than double the span of the values no diverged seed drew: y limits
    around those and the diverged values within that reach (5% margins; on a log axis in decades). Else None (the
    axis scales itself)."""
    scaled = np.log10(values) if log else values
    kept, wild = scaled[~diverged], scaled[diverged]
    if not (len(kept) and len(wild)):
        return None
    lo, hi = kept.min(), kept.max()
    span = hi - lo if hi > lo else abs(hi) or 1.0
    near = wild[(lo - span <= wild) & (wild <= hi + span)]
    if len(near) == len(wild):
        return None
    lo, hi = np.min(near.to_numpy(), initial=lo), np.max(near.to_numpy(), initial=hi)
    limits = np.array([lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)])
    return tuple(10 ** limits if log else limits)


def mark_diverged(ax: plt.Axes, sub: pd.DataFrame, y: str, x: str = "round") -> str:
    """A cross at the last finite point of every diverged seed, so a reader sees it stopped. Where a diverged
    seed's values would more than double the span of everything else drawn, the y axis keeps that span (a loss of
    1e7 would flatten every other curve into one line) and the cross sits on the axis's edge; the note returned
    for the panel's title says so ("" when none is off scale). Call it after the axis's scale is set."""
    log = ax.get_yscale() == "log"
    finite = sub[np.isfinite(sub[y]) & ((sub[y] > 0) if log else True)]
    limits = _kept_limits(finite[y], finite["diverged"], log)
    if limits:
        ax.set_ylim(*limits)
    off = []  # the last values off scale
    for _, run in finite[finite["diverged"]].groupby(["run_id", "seed"]):
        last = run.sort_values(x).iloc[-1]
        at = last[y]
        if limits and not limits[0] <= at <= limits[1]:
            at = min(max(at, limits[0]), limits[1])
            off.append(last[y])
        else:
            ax.annotate("diverged", (last[x], at), textcoords="offset points", xytext=(4, 4), fontsize=7,
                        color="crimson")
        ax.plot(last[x], at, marker="x", color="crimson", markersize=8, mew=2, zorder=5, clip_on=False)
    if not off:
        return ""
    reach = f"{min(off):.2g}" + (f" to {max(off):.2g}" if len(off) > 1 else "")
    return f"\n(x: {len(off)} diverged seed{'s' * (len(off) > 1)} off scale, at {reach})"


def finish_figure(fig: plt.Figure, axes, used: int, table: pd.DataFrame, figure: Figure, band: str) -> plt.Figure:
    """Hide the axes after the first `used`; title the figure with its scale and how the seeds are
    summarised, `band` e.g. "line: median of {seeds} seeds, band: min-max"."""
    for ax in list(axes.flat)[used:]:
        ax.set_visible(False)
    seeds = table.groupby("run_id")["seed"].nunique().max()
    suptitle(fig, figure, band.format(seeds=seeds) if seeds > 1 else "1 seed")
    fig.tight_layout()
    return fig


def save_figure(fig: plt.Figure, figure: Figure, pdf: Path, png: Path) -> None:
    """Write PDF and PNG atomically; the scale, deviations and stand-in data go into the file metadata."""
    title = f"{figure.title} [{stand_in_note(figure)}]" if figure.stand_ins else figure.title
    save_pdf_png(fig, pdf, png, title, ". ".join(filter(None, [figure.title, stand_in_note(figure),
                                                                scale_note(figure), "; ".join(figure.deviations)])))


def save_pdf_png(fig: plt.Figure, pdf: Path, png: Path, title: str, description: str) -> None:
    """Write PDF and PNG atomically with `title` and `description` in the file metadata; the math of every text
    drawn as mathtext."""
    for text in fig.findobj(Text):
        text.set_text(mathtext(text.get_text()))
    pdf_meta = {"Title": title, "Subject": description, "Creator": "fedrepro"}
    # PDF dates would make every rebuild differ byte-wise; leave them out.
    pdf_meta.update({"CreationDate": None, "ModDate": None})
    with recorded(pdf, png):
        with atomic_path(pdf, suffix=".pdf") as tmp:
            fig.savefig(tmp, format="pdf", metadata=pdf_meta, bbox_inches="tight")
        with atomic_path(png, suffix=".png") as tmp:
            fig.savefig(tmp, format="png", dpi=150, metadata={"Title": title, "Description": description},
                        bbox_inches="tight")
    plt.close(fig)


@contextlib.contextmanager
def recorded(*files: Path) -> Iterator[None]:
    """Write a figure's files (in the block), then the sha256 of each in its record (layout.figure_record), which the
    audit compares them with: a figure swapped for another is found, though rendering is not byte-stable across
    machines. The old record goes first, so a job killed midway leaves none (the audit says so; Snakemake reruns
    the job)."""
    record = figure_record(files[0])
    record.unlink(missing_ok=True)
    yield
    write_sha256s(record, list(files))
