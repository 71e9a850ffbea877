"""Figure kind `table`: one summary value per run, laid out as rows x columns (e.g. DeFedAvg's Table I:
wall-clock time to reach a target accuracy, methods x settings), written as CSV, Markdown and LaTeX.

Options (the figure's `plot`):
  rows    : label columns whose values name the rows (e.g. [method])
  columns : label columns whose values name the columns (e.g. [panel, n_clients]); may be empty
  value   : {summary: time_to_target, metric, target (one value or one per panel), higher, x, seeds}
            or {summary: final, metric, x, window}: results/summaries.py
  digits  : significant digits in Markdown and LaTeX (the CSV keeps full precision)
A cell holds exactly one run; a time that is never reached is inf (∞ in the text tables).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from fedrepro.experiments.runtable import Figure
from fedrepro.plots.common import scale_note
from fedrepro.results import summaries
from fedrepro.results.tables import read_figure_table
from fedrepro.utils.atomic import atomic_path

# summary name -> (per-run summary of a table, the column it fills)
SUMMARIES: dict[str, tuple[Callable[..., pd.DataFrame], str]] = {
    "time_to_target": (summaries.time_to_target, "t_target"),
    "final": (summaries.final_mean, "final"),
}


def _describe(value: dict[str, Any]) -> str:
    if value["summary"] == "time_to_target":
        sign = ">=" if value["higher"] else "<="
        return (f"{value.get('x', 'round')} at which {value['metric']} first reaches {sign} {value['target']} "
                f"({value.get('seeds', 'mean')} over seeds; ∞: never)")
    return f"final {value['metric']} (mean over seeds of the last {value.get('window', 0.1):g} of the x range)"


def summary_table(table: pd.DataFrame, figure: Figure, *, rows: list[str], columns: list[str],
                  value: dict[str, Any]) -> pd.DataFrame:
    """rows x columns of the summary `value` of each run; rows and columns in the figure's order."""
    params = dict(value)
    summarize, stat = SUMMARIES[params.pop("summary")]
    per_run = summarize(table, figure.label_columns, **params)
    keys = rows + columns
    clash = per_run[per_run.duplicated(keys, keep=False)]
    if len(clash):
        raise ValueError(f"table {figure.name}: several runs in one cell {clash[keys].iloc[0].to_dict()}; "
                         f"add the label column that tells them apart to rows or columns")
    if not columns:
        return per_run.set_index(rows)[[stat]].rename(columns={stat: value["metric"]})
    wide = per_run.pivot(index=rows, columns=columns, values=stat)
    # first-appearance order (the figure's panels and curves), not sorted
    wide = wide.reindex(index=pd.unique(per_run.set_index(rows).index),
                        columns=pd.unique(per_run.set_index(columns).index))
    return wide


def _name(key: Any) -> str:
    return ", ".join(map(str, key)) if isinstance(key, tuple) else str(key)


def _cell(v: float, digits: int) -> str:
    if pd.isna(v):
        return "–"
    return "∞" if math.isinf(v) else f"{v:.{digits}g}"


def _text_rows(wide: pd.DataFrame, digits: int) -> list[list[str]]:
    """Header and body rows as text: numbers to `digits` significant digits, ∞ never reached, – absent."""
    header = [" / ".join(map(str, wide.index.names))] + [_name(c) for c in wide.columns]
    return [header] + [[_name(i)] + [_cell(v, digits) for v in row] for i, row in zip(wide.index, wide.to_numpy())]


def markdown(wide: pd.DataFrame, figure: Figure, value: dict[str, Any], digits: int = 4) -> str:
    header, *body = _text_rows(wide, digits)
    lines = [f"**{figure.title}**", "", f"Value: {_describe(value)}. {scale_note(figure)}.", "",
             "| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines) + "\n"


_TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$",
                "{": r"\{", "}": r"\}", "∞": r"$\infty$", "–": "--"}


def _tex(text: str) -> str:
    return "".join(_TEX_ESCAPES.get(char, char) for char in text)


def latex(wide: pd.DataFrame, figure: Figure, value: dict[str, Any], digits: int = 4) -> str:
    header, *body = [[_tex(cell) for cell in row] for row in _text_rows(wide, digits)]
    lines = [f"% {figure.title}; value: {_describe(value)}; {scale_note(figure)}",
             "\\begin{tabular}{l" + "r" * (len(header) - 1) + "}", "\\hline", " & ".join(header) + " \\\\", "\\hline"]
    lines += [" & ".join(row) + " \\\\" for row in body]
    lines += ["\\hline", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_table_figure(figure: Figure, table_path: Path, csv: Path, md: Path, tex: Path) -> None:
    """The three files of a `table` figure from its figure table."""
    options = dict(figure.plot)
    if options.pop("kind") != "table":
        raise ValueError(f"figure {figure.name} is a drawing ({figure.plot['kind']}), not a table: "
                         f"its files are .{' and .'.join(figure.formats)}")
    digits = options.pop("digits", 4)
    wide = summary_table(read_figure_table(table_path), figure, **options)
    flat = wide.set_axis([_name(c) for c in wide.columns], axis=1)
    with atomic_path(csv, suffix=".csv") as tmp:
        flat.reset_index().to_csv(tmp, index=False)
    for path, text in ((md, markdown(wide, figure, options["value"], digits)),
                       (tex, latex(wide, figure, options["value"], digits))):
        with atomic_path(path, suffix=path.suffix) as tmp:
            Path(tmp).write_text(text)
