"""Figure kind `table`: one summary value per run, laid out as rows x columns (e.g. DeFedAvg's Table I:
wall-clock time to reach a target accuracy, methods x settings), written as CSV, Markdown and LaTeX.

Options (the figure's `plot`):
  rows      : label columns whose values name the rows (e.g. [partition, curve])
  columns   : label columns whose values name the columns (e.g. [dataset, n]); may be empty
  value     : {summary: time_to_target, metric, target (one value or one per panel), higher, x, seeds}
              or {summary: final, metric, x, window}: results/summaries.py
  digits    : significant digits in Markdown and LaTeX (the CSV keeps full precision)
  names     : display names of label values and label columns in the text tables and in the keys of
              `reference` and `speedup` (e.g. {fashion_mnist: FMNIST, classes: non-IID}); the CSV keeps
              the raw values, as in the figure table
  never     : (time_to_target) how a target never reached shows: inf (∞, the default) or horizon (">H",
              H the run's horizon: its `time_horizon` setting on a time axis, `rounds` on the round axis,
              else the last logged x), so that every cell holds a number or ">H"
  reference : the paper's values of the same cells, {row label: {column label: value}}, a value being a
              number or ">H"; labels as the text tables show them (names applied, several label columns
              joined by ", "; quote such a label inside a YAML {...}, which splits at commas). Every cell
              that holds a run needs one (a typo cannot pass silently); entries for cells absent at this
              scale are ignored
  speedup   : (time_to_target) {group: a row column (optional), proposed: the proposed method's row label,
              or with a group {group label: its row label} (the label as displayed or the raw value;
              every group of the table needs one)}: per group of rows and column, best baseline / proposed
              (the baselines are the group's other rows, the method named by the row columns other than
              the group), with the best baseline named, for ours and the paper's values

Cells: a run's value, ">H" (never reached within H), ∞ (never reached, `never: inf`) or – (no run).
Ratios and speed-ups with a ">H" operand are bounds: ours ">H" against the paper's p gives ours/paper
">H/p"; the paper's ">H" against ours o gives "<o/H"; both ">H", or a proposed method that never reaches the
target, leave the ratio undefined (–). When every baseline misses the target the speed-up is ">H/proposed".

Files: without `reference` and `speedup` the CSV is the table itself (rows x columns). With either, the CSV
is long, one line per cell that holds a run: the row and column label columns (raw values), ours, and
paper, ratio (ours/paper) and speedup, best_baseline, paper_speedup, paper_best_baseline as given (the
speed-ups on the proposed method's lines). Markdown and LaTeX show the wide tables one after the other:
ours, the paper's, ours/paper, then the speed-ups (ours and the paper's per group).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from fedrepro.experiments.runtable import Figure
from fedrepro.plots.common import recorded, scale_note
from fedrepro.results import summaries
from fedrepro.results.tables import paper_values, read_figure_table
from fedrepro.utils.atomic import atomic_path

# summary name -> (per-run summary of a table, the column it fills)
SUMMARIES: dict[str, tuple[Callable[..., pd.DataFrame], str]] = {
    "time_to_target": (summaries.time_to_target, "t_target"),
    "final": (summaries.final_mean, "final"),
}
NEVER = ("inf", "horizon")
# the setting that is a run's horizon on an x axis (else the run's last logged x)
HORIZON_SETTINGS = {"virtual_time": "time_horizon", "round": "rounds"}


@dataclass(frozen=True)
class Cell:
    """One value of a table: `value` itself (sign ""), or a bound, the true value being above (">") or
    below ("<") it; nan: no value."""

    value: float = math.nan
    sign: str = ""

    @property
    def absent(self) -> bool:
        return math.isnan(self.value)

    @property
    def exact(self) -> bool:
        """A known finite value."""
        return not self.sign and math.isfinite(self.value)

    def text(self, digits: int) -> str:
        if self.absent:
            return "–"
        return self.sign + ("∞" if math.isinf(self.value) else f"{self.value:.{digits}g}")

    def csv(self) -> float | str:
        """Exact values as numbers (full precision), bounds as text, nothing as an empty cell."""
        if self.absent:
            return ""
        return f"{self.sign}{self.value:.12g}" if self.sign else self.value


ABSENT = Cell()


def parse_cell(value: Any, where: str) -> Cell:
    """A value given in the configuration: a number, or ">H" for "not reached within H"."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Cell(float(value))
    if isinstance(value, str):
        text = value.strip()
        sign = ">" if text.startswith(">") else ""
        try:
            return Cell(float(text.lstrip(">").strip().replace("∞", "inf")), sign)
        except ValueError:
            pass
    raise ValueError(f"{where}: {value!r} is neither a number nor '>H' (e.g. '>880')")


def ratio(ours: Cell, paper: Cell) -> Cell:
    """ours / paper, a bound when one of them is a ">H" (see the module docstring)."""
    if ours.absent or paper.absent or (ours.sign and paper.sign) or paper.value == 0:
        return ABSENT
    r = ours.value / paper.value
    if not (ours.sign or paper.sign):
        return Cell(r)
    # ours > H: ours/paper > H/paper; the paper's > H: ours/paper < ours/H
    return Cell(r, ">" if ours.sign else "<") if math.isfinite(r) and r > 0 else ABSENT


def speedup(times: dict[str, Cell], proposed: str) -> tuple[Cell, str]:
    """(best baseline / proposed, the best baseline's label) over one group's rows in one column.
    Undefined (–) when the proposed method has no finite time; when no baseline has a finite time
    either, ">smallest H / proposed" without a name."""
    mine = times[proposed]
    others = {label: t for label, t in times.items() if label != proposed and not t.absent}
    if not mine.exact or mine.value <= 0 or not others:
        return ABSENT, ""
    reached = {label: t.value for label, t in others.items() if t.exact}
    if reached:
        best = min(reached, key=reached.get)
        return Cell(reached[best] / mine.value), best
    lowest = min(t.value for t in others.values())  # a ">H" baseline took more than H
    return (Cell(lowest / mine.value, ">") if math.isfinite(lowest) else Cell(math.inf)), ""


def _describe(value: dict[str, Any], never: str = "inf") -> str:
    if value["summary"] == "time_to_target":
        sign = ">=" if value["higher"] else "<="
        missing = ">H: not within the run's horizon H" if never == "horizon" else "∞: never"
        return (f"{value.get('x', 'round')} at which {value['metric']} first reaches {sign} {value['target']} "
                f"({value.get('seeds', 'mean')} over seeds; {missing})")
    return f"final {value['metric']} (mean over seeds of the last {value.get('window', 0.1):g} of the x range)"


def _per_run(table: pd.DataFrame, figure: Figure, rows: list[str], columns: list[str],
             value: dict[str, Any]) -> tuple[pd.DataFrame, str]:
    """The summary of each run with its labels, and the name of the summary's column; one run a cell."""
    params = dict(value)
    summarize, stat = SUMMARIES[params.pop("summary")]
    per_run = summarize(table, figure.label_columns, **params)
    keys = rows + columns
    missing = [k for k in keys if k not in per_run]
    if missing:
        raise ValueError(f"table {figure.name}: rows/columns name {missing}, not label columns of its table; "
                         f"allowed: {', '.join(c for c in figure.label_columns if c in per_run)}")
    clash = per_run[per_run.duplicated(keys, keep=False)]
    if len(clash):
        raise ValueError(f"table {figure.name}: several runs in one cell {clash[keys].iloc[0].to_dict()}; "
                         f"add the label column that tells them apart to rows or columns")
    return per_run, stat


def _wide(per_run: pd.DataFrame, rows: list[str], columns: list[str], stat: str, name: str) -> pd.DataFrame:
    """per_run's `stat` as rows x columns in first-appearance order (the figure's panels and curves), not
    sorted; without columns, one column called `name`."""
    if not columns:
        return per_run.set_index(rows)[[stat]].rename(columns={stat: name})
    wide = per_run.pivot(index=rows, columns=columns, values=stat)
    return wide.reindex(index=pd.unique(per_run.set_index(rows).index),
                        columns=pd.unique(per_run.set_index(columns).index))


def horizons(table: pd.DataFrame, per_run: pd.DataFrame, x: str) -> pd.Series:
    """Each run's horizon on the x axis (indexed like per_run): its horizon setting, else its last x."""
    setting = HORIZON_SETTINGS.get(x)
    if setting in per_run and per_run[setting].notna().all():
        return per_run[setting].astype(float)
    return per_run["run_id"].map(table.groupby("run_id")[x].max()).astype(float)


def cell_table(table: pd.DataFrame, figure: Figure, *, rows: list[str], columns: list[str],
               value: dict[str, Any], never: str = "inf") -> pd.DataFrame:
    """rows x columns of Cells: the summary of each run in the figure's order, ">H" for a target never
    reached when never = horizon, absent where no run fills the cell."""
    if never not in NEVER:
        raise ValueError(f"table {figure.name}: never {never!r}; allowed: {', '.join(NEVER)}")
    per_run, stat = _per_run(table, figure, rows, columns, value)
    cells = [Cell(float(v)) for v in per_run[stat]]
    if never == "horizon":
        H = horizons(table, per_run, value.get("x", "round"))
        cells = [Cell(h, ">") if math.isinf(c.value) else c for c, h in zip(cells, H)]
    wide = _wide(per_run.assign(cell=cells), rows, columns, "cell", value["metric"])
    return wide.map(lambda c: c if isinstance(c, Cell) else ABSENT)  # the pivot's holes are NaN


class Labels:
    """Display names of label values (`names`), and the label of a row or column key of a wide table."""

    def __init__(self, names: dict[str, str] | None) -> None:
        self.names = {str(k): str(v) for k, v in (names or {}).items()}

    def value(self, v: Any) -> str:
        return self.names.get(str(v), str(v))

    def key(self, key: Any) -> str:
        return ", ".join(map(self.value, key if isinstance(key, tuple) else (key,)))

    def header(self, wide: pd.DataFrame) -> list[str]:
        return [" / ".join(self.value(n) for n in wide.index.names)] + [self.key(c) for c in wide.columns]


def reference_table(wide: pd.DataFrame, reference: dict[str, dict[str, Any]], labels: Labels,
                    table: pd.DataFrame, name: str) -> pd.DataFrame:
    """The paper's values for the cells of `wide` (table `name`'s, from the figure `table`), from {row label:
    {column label: value}} with the labels at the paper's values of settings the scale maps (the table's paper
    columns). A cell that holds a run must have one; the error names every missing cell."""
    given = {str(r): {str(c): v for c, v in (cols or {}).items()} for r, cols in reference.items()}
    out = pd.DataFrame(ABSENT, index=wide.index, columns=wide.columns, dtype=object)
    missing = []
    paper = {n: paper_values(table, n) for n in (*wide.index.names, *wide.columns.names) if n in table}

    def paper_key(key: Any, names: list[str]) -> str:  # the labels at the paper's values (n = 10, not 2 of 20)
        values = key if isinstance(key, tuple) else (key,)
        return labels.key(tuple(paper[name][v] if name in paper else v for name, v in zip(names, values)))

    for i in wide.index:
        for j in wide.columns:
            row, col = paper_key(i, list(wide.index.names)), paper_key(j, list(wide.columns.names))
            if col in given.get(row, {}):
                out.loc[i, j] = parse_cell(given[row][col], f"table {name}: reference[{row!r}][{col!r}]")
            elif not wide.loc[i, j].absent:
                missing.append(f"[{row!r}][{col!r}]")
    if missing:
        raise ValueError(f"table {name}: reference has no value for {len(missing)} cell(s) that hold a run: "
                         f"{', '.join(missing[:6])}{' ...' if len(missing) > 6 else ''}; rows are "
                         f"{[labels.key(i) for i in wide.index]}, columns {[labels.key(j) for j in wide.columns]}")
    return out


@dataclass(frozen=True)
class GroupSpeedup:
    """The speed-ups of one group of rows: {column key: (best baseline / proposed, best baseline)}."""

    group: str  # the group's label; "" without a group
    proposed: Any  # the proposed method's row key in the wide table
    values: dict[Any, tuple[Cell, str]]


@dataclass(frozen=True)
class Speedup:
    """Option `speedup`: the proposed method's row in each group of rows."""

    group: str | None
    proposed: str | dict[str, str]

    @classmethod
    def of(cls, options: dict[str, Any], rows: list[str], figure: Figure) -> Speedup:
        if not isinstance(options, dict) or set(options) - {"group", "proposed"} or "proposed" not in options:
            raise ValueError(f"table {figure.name}: speedup takes {{group (optional), proposed}}, got {options!r}")
        group, proposed = options.get("group"), options["proposed"]
        if group is not None and (group not in rows or len(rows) < 2):
            raise ValueError(f"table {figure.name}: speedup group {group!r} must be one of several rows {rows}, "
                             f"the others naming the methods")
        if isinstance(proposed, dict) != (group is not None):
            raise ValueError(f"table {figure.name}: speedup proposed is one row label without a group, "
                             f"{{group label: row label}} with one")
        return cls(group, {str(k): str(v) for k, v in proposed.items()} if group else str(proposed))

    def rows(self, wide: pd.DataFrame, labels: Labels, figure: Figure) -> list[tuple[str, dict[str, Any], str]]:
        """(group label, {method label: row key}, the proposed method's label) per group, in the table's
        order. Every group of the table needs its proposed method (a misspelt group cannot pass silently);
        keys for groups absent at this scale are ignored. A group is named as displayed or by its raw value."""
        level = list(wide.index.names).index(self.group) if self.group is not None else None
        groups: dict[tuple[str, str], dict[str, Any]] = {}
        for key in wide.index:
            parts = key if isinstance(key, tuple) else (key,)
            group = (labels.value(parts[level]), str(parts[level])) if level is not None else ("", "")
            method = labels.key(tuple(p for n, p in enumerate(parts) if n != level))
            groups.setdefault(group, {})[method] = key
        out = []
        for (group, raw), methods in groups.items():
            if isinstance(self.proposed, dict):
                if group not in self.proposed and raw not in self.proposed:
                    raise ValueError(f"table {figure.name}: speedup proposed names no method for group {group!r}; "
                                     f"it names {', '.join(self.proposed)}")
                proposed = self.proposed.get(group, self.proposed.get(raw))
            else:
                proposed = self.proposed
            if proposed not in methods:
                raise ValueError(f"table {figure.name}: speedup proposed {proposed!r} is not a row"
                                 f"{f' of group {group!r}' if group else ''}; allowed: {', '.join(methods)}")
            out.append((group, methods, proposed))
        return out

    def of_cells(self, cells: pd.DataFrame, labels: Labels, figure: Figure) -> list[GroupSpeedup]:
        return [GroupSpeedup(group, methods[proposed],
                             {j: speedup({m: cells.loc[k, j] for m, k in methods.items()}, proposed)
                              for j in cells.columns})
                for group, methods, proposed in self.rows(cells, labels, figure)]


def _body(wide: pd.DataFrame, labels: Labels, digits: int) -> list[list[str]]:
    return [[labels.key(i)] + [c.text(digits) for c in row] for i, row in zip(wide.index, wide.to_numpy())]


def _speedup_text(value: tuple[Cell, str], digits: int) -> str:
    cell, best = value
    return cell.text(digits) + (f" ({best})" if best else "")


# A section of the text tables: (heading or None, header row, body rows)
Section = tuple[str | None, list[str], list[list[str]]]
# The speed-ups of our values and of the paper's (None without a reference)
Speedups = tuple[list[GroupSpeedup], list[GroupSpeedup] | None]


def sections(cells: pd.DataFrame, labels: Labels, digits: int, paper: pd.DataFrame | None,
             speedups: Speedups | None, group: str | None) -> list[Section]:
    """The wide tables shown one after the other: ours, then with a reference the paper's and ours/paper,
    then the speed-ups (a line per group for ours and one for the paper's)."""
    header = labels.header(cells)
    ours = _body(cells, labels, digits)
    if paper is None and speedups is None:
        return [(None, header, ours)]
    out: list[Section] = [("ours", header, ours)]
    if paper is not None:
        ratios = cells.combine(paper, lambda o, p: pd.Series(map(ratio, o, p), index=o.index))
        out += [("paper", header, _body(paper, labels, digits)),
                ("ours / paper", header, _body(ratios, labels, digits))]
    if speedups is not None:
        rows = []
        for k, mine in enumerate(speedups[0]):
            for source, of in (("ours", speedups[0]), ("paper", speedups[1])):
                if of is not None:
                    name = f"{mine.group}, {source}" if mine.group else source
                    rows.append([name] + [_speedup_text(of[k].values[j], digits) for j in cells.columns])
        corner = " / ".join(([labels.value(group)] if group else []) + ["values"])
        out.append(("speed-up: best baseline / proposed (best baseline)", [corner] + header[1:], rows))
    return out


def markdown(parts: list[Section], figure: Figure, value: dict[str, Any], never: str = "inf") -> str:
    lines = [f"**{figure.title}**", "", f"Value: {_describe(value, never)}. {scale_note(figure)}.", ""]
    for heading, header, body in parts:
        if heading:
            lines += [f"*{heading}*", ""]
        lines += ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in body] + [""]
    return "\n".join(lines[:-1]) + "\n"


_TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$",
                "{": r"\{", "}": r"\}", "∞": r"$\infty$", "–": "--", ">": r"$>$", "<": r"$<$"}


def _tex(text: str) -> str:
    return "".join(_TEX_ESCAPES.get(char, char) for char in text)


def latex(parts: list[Section], figure: Figure, value: dict[str, Any], never: str = "inf") -> str:
    lines = [f"% {figure.title}; value: {_describe(value, never)}; {scale_note(figure)}"]
    for heading, header, body in parts:
        header, body = [_tex(c) for c in header], [[_tex(c) for c in row] for row in body]
        lines += ["\\begin{tabular}{l" + "r" * (len(header) - 1) + "}", "\\hline"]
        if heading:
            lines.append(f"\\multicolumn{{{len(header)}}}{{l}}{{\\textbf{{{_tex(heading)}}}}} \\\\")
        lines += [" & ".join(header) + " \\\\", "\\hline"]
        lines += [" & ".join(row) + " \\\\" for row in body]
        lines += ["\\hline", "\\end{tabular}", ""]
    return "\n".join(lines[:-1]) + "\n"


def _keys(names: list[str], key: Any) -> dict[str, Any]:
    return dict(zip(names, key if isinstance(key, tuple) else (key,)))


def long_csv(cells: pd.DataFrame, paper: pd.DataFrame | None, speedups: Speedups | None) -> pd.DataFrame:
    """One line per cell that holds a run: raw row and column labels, ours, and paper, ratio and the
    speed-ups (on the proposed method's lines) when given."""
    proposed = {} if speedups is None else {g.proposed: k for k, g in enumerate(speedups[0])}
    lines = []
    for i in cells.index:
        for j in cells.columns:
            ours = cells.loc[i, j]
            if ours.absent:
                continue
            line = {**_keys(cells.index.names, i), **_keys(cells.columns.names, j), "ours": ours.csv()}
            if paper is not None:
                line.update(paper=paper.loc[i, j].csv(), ratio=ratio(ours, paper.loc[i, j]).csv())
            for prefix, of in zip(("", "paper_"), speedups or ()):
                if of is not None:
                    s, best = of[proposed[i]].values[j] if i in proposed else (ABSENT, "")
                    line.update({f"{prefix}speedup": s.csv(), f"{prefix}best_baseline": best})
            lines.append(line)
    return pd.DataFrame(lines)


RAW = Labels(None)


def write_table_figure(figure: Figure, table_path: Path, csv: Path, md: Path, tex: Path) -> None:
    """The three files of a `table` figure from its figure table."""
    options = dict(figure.plot)
    if options.pop("kind") != "table":
        raise ValueError(f"figure {figure.name} is a drawing ({figure.plot['kind']}), not a table: "
                         f"its files are .{' and .'.join(figure.formats)}")
    digits = options.pop("digits", 4)
    labels = Labels(options.pop("names", None))
    reference, speedup_options = options.pop("reference", None), options.pop("speedup", None)
    value, never = options["value"], options.get("never", "inf")
    for name, used in (("never: horizon", never == "horizon"), ("speedup", speedup_options is not None)):
        if used and value["summary"] != "time_to_target":
            raise ValueError(f"table {figure.name}: {name} is for value summary time_to_target, not {value['summary']}")
    table = read_figure_table(table_path)
    cells = cell_table(table, figure, **options)
    paper = None if reference is None else reference_table(cells, reference, labels, table, figure.name)
    speedups, group = None, None
    if speedup_options is not None:
        rule = Speedup.of(speedup_options, options["rows"], figure)
        group = rule.group
        speedups = (rule.of_cells(cells, labels, figure), None if paper is None else rule.of_cells(paper, labels, figure))
    if paper is None and speedups is None:
        frame = cells.map(Cell.csv).set_axis([RAW.key(c) for c in cells.columns], axis=1).reset_index()
    else:
        frame = long_csv(cells, paper, speedups)
    parts = sections(cells, labels, digits, paper, speedups, group)
    with recorded(csv, md, tex):
        with atomic_path(csv, suffix=".csv") as tmp:
            frame.to_csv(tmp, index=False)
        for path, text in ((md, markdown(parts, figure, value, never)), (tex, latex(parts, figure, value, never))):
            with atomic_path(path, suffix=path.suffix) as tmp:
                Path(tmp).write_text(text)
