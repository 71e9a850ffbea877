"""Styling and saving shared by all figures."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on pipeline machines
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from fedrepro.experiments.runtable import Figure  # noqa: E402
from fedrepro.utils.atomic import atomic_path  # noqa: E402


def theme() -> None:
    sns.set_theme(style="whitegrid", context="paper", font_scale=1.0)


def scale_note(figure: Figure) -> str:
    # a scale without deviations (e.g. quick = paper for a small paper) is not reduced
    reduced = figure.scale != "paper" and figure.deviations
    return f"scale: {figure.scale}" + (" (reduced; see caption)" if reduced else "")


def save_figure(fig: plt.Figure, figure: Figure, pdf: Path, png: Path) -> None:
    """Write PDF and PNG atomically; the scale and deviations go into the file metadata."""
    description = f"{figure.title}. {scale_note(figure)}. " + "; ".join(figure.deviations)
    pdf_meta = {"Title": figure.title, "Subject": description, "Creator": "fedrepro"}
    # PDF dates would make every rebuild differ byte-wise; leave them out.
    pdf_meta.update({"CreationDate": None, "ModDate": None})
    with atomic_path(pdf, suffix=".pdf") as tmp:
        fig.savefig(tmp, format="pdf", metadata=pdf_meta, bbox_inches="tight")
    with atomic_path(png, suffix=".png") as tmp:
        fig.savefig(tmp, format="png", dpi=150, metadata={"Title": figure.title, "Description": description},
                    bbox_inches="tight")
    plt.close(fig)
