"""Expected results: what a reader sees without running anything, and what a rerun is compared with.

docs/papers/<paper>/<scale>/ holds, taken from one results tree (`fedrepro docs --from-results SCALE`):
- ledger.csv and ledger.json: the claims ledger and its record, as the run wrote them;
- <figure>.png: each drawn figure, shrunk to browse on a code host; <table>.md: each table as markdown, our cells
  beside the paper's where it gives them (DeFedAvg's Table I);
- digest.csv: each figure's curves, the seed mean of every metric at up to DIGEST_POINTS rounds per curve;
- stamp.json: what the runs ran on (commits, numerics versions, devices, platforms, packages).
The paper pages render their verdict tables from these files (paper_docs.py), and `fedrepro compare` reads them.
"""

from __future__ import annotations

import io
import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedrepro.claims.seal import read_ledger, verify_ledger
from fedrepro.errors import ResultsError
from fedrepro.experiments.runtable import Figure, RunTable
from fedrepro.experiments.store import read_record, run_files
from fedrepro.layout import CLAIMS_FIGURE, Layout
from fedrepro.utils.atomic import write_bytes, write_json, write_text
from fedrepro.utils.digest import file_sha256

DOCS = Path("docs/papers")
DIGEST_POINTS = 20  # rounds kept per curve: enough to see where two curves part, small enough to commit
PNG_WIDTH = 900  # pixels: a figure as a code host shows it
DIGEST_SEAL = "digest_sha256"  # stamp.json's record of digest.csv as written
DIGEST_FLOATS = "%.9g"  # digits a digest keeps: a rerun's digest is compared as written, so equal runs read 0
X = "round"  # the x of every digest: each engine's metrics.csv has it
NOT_METRICS = ("seed", "round", "iteration")  # columns of metrics.csv that index rows, not measure them
# the facts of a run's record that decide its floats besides the code: a difference here explains a difference
# in the numbers without any change to the code (as audit --rerun names them)
FLOAT_FACTS = ("device", "platform", "packages")


def reference_dir(paper: str, scale: str, docs: Path = DOCS) -> Path:
    return docs / paper / scale


def reference_scales(paper: str, docs: Path = DOCS) -> list[str]:
    """The scales with a committed reference for `paper`, in the order of schemas.SCALES."""
    from fedrepro.schemas import SCALES

    return [s for s in SCALES if (reference_dir(paper, s, docs) / "ledger.csv").is_file()]


# --- what the runs ran on -------------------------------------------------------------------------------------


def stamp_of(records: list[dict[str, Any]]) -> dict[str, Any]:
    """What a set of runs ran on, from their run.json records: each fact with the number of runs that had it."""

    def counted(values) -> dict[str, int]:
        return dict(sorted(Counter(values).items()))

    def commit(record: dict[str, Any]) -> str:
        git = record.get("git") or {}
        return (git.get("commit") or "unknown") + (" (uncommitted changes)" if git.get("dirty") else "")

    return {
        "runs": len(records),
        "commits": counted(commit(r) for r in records),
        "numerics": counted(f"{r['spec'].get('engine', '?')} {r.get('numerics', '?')}" for r in records),
        "devices": counted(str((r.get("device") or {}).get("device", "?")) for r in records),
        "platforms": counted(str((r.get("platform") or {}).get("cpu_model", "?")) for r in records),
        "packages": counted(f"{name} {version}" for r in records for name, version in (r.get("packages") or {}).items()),
    }


def stamp_text(stamp: dict[str, Any]) -> str:
    """One line: "commit 1a2b3c4, numerics finite_sum 1, on cpu (AMD EPYC), torch 2.13.0+cpu"."""
    commits = ", ".join(c[:7] + (" with uncommitted changes" if "uncommitted" in c else "") for c in stamp["commits"])
    packages = ", ".join(p for p in stamp["packages"] if p.split()[0] in ("torch", "numpy", "python"))
    devices = ", ".join(stamp["devices"]) + " (" + ", ".join(stamp["platforms"]) + ")"
    return (f"{stamp['runs']} runs at commit {commits}; numerics {', '.join(stamp['numerics'])}; on {devices}; "
            f"{packages}")


def records_of(results: Path, run_ids: list[str]) -> list[dict[str, Any]]:
    records = []
    for rid in run_ids:
        try:
            records.append(read_record(run_files(results, rid).record))
        except (OSError, ResultsError) as err:
            raise ResultsError(f"run {rid}: its run.json cannot be read ({err}); run `fedrepro audit` first") from err
    return records


# --- the digest of a figure's curves --------------------------------------------------------------------------


def metric_columns(table: pd.DataFrame) -> list[str]:
    """A figure table's metrics: the numeric columns of the runs' metrics.csv (from `seed` on) that measure, not
    index, and that change along some curve (a constant, such as a run's optimum, draws no curve)."""
    if "seed" not in table or X not in table:
        return []
    after = list(table.columns[list(table.columns).index("seed"):])
    numeric = [c for c in after if c not in NOT_METRICS and pd.api.types.is_numeric_dtype(table[c])]
    keys = [k for k in ("run_id", "seed") if k in table]
    varies = table.groupby(keys, sort=False)[numeric].nunique(dropna=False).max() > 1 if keys else None
    return [c for c in numeric if varies is None or varies[c]]


def digest(table: pd.DataFrame, figure: str, points: int = DIGEST_POINTS) -> pd.DataFrame:
    """The seed mean of each metric of each curve at up to `points` of its rounds, evenly spread, in long form
    (figure, panel, curve, metric, round, mean)."""
    metrics = metric_columns(table)
    if not metrics:
        return pd.DataFrame(columns=DIGEST_COLUMNS)
    keys = [k for k in ("panel", "curve") if k in table]
    means = table.groupby(keys + [X], sort=True, dropna=False)[metrics].mean().reset_index()
    parts = []
    for _, curve in means.groupby(keys, sort=True, dropna=False):
        rounds = np.unique(curve[X].to_numpy())
        keep = rounds[np.unique(np.linspace(0, len(rounds) - 1, min(points, len(rounds))).round().astype(int))]
        parts.append(curve[curve[X].isin(keep)])
    long = pd.concat(parts).melt(id_vars=keys + [X], value_vars=metrics, var_name="metric", value_name="mean")
    long.insert(0, "figure", figure)
    for k in ("panel", "curve"):
        long[k] = long[k].fillna("").astype(str) if k in long else ""
    return long[DIGEST_COLUMNS].sort_values(
        ["figure", "panel", "curve", "metric", X], kind="stable").reset_index(drop=True)


def digested(figures: list[Figure]) -> list[Figure]:
    """The figures a digest covers: each run's curves once. A table whose runs are all drawn by the paper's other
    figures is left out (DeFedAvg's Table I reads Figs 2-5's runs): its numbers are the ledger's, its curves theirs."""
    drawn = {c.run_id for f in figures if f.plot.get("kind") != "table" for c in f.curves}
    return [f for f in figures if f.plot.get("kind") != "table" or not {c.run_id for c in f.curves} <= drawn]


def digest_of(layout: Layout, table: RunTable, paper: str) -> pd.DataFrame:
    """The digest of every digested figure of `paper` whose table is on disk."""
    parts = [d for f in digested(table.paper_figures(paper))
             if (path := layout.table(paper, f.name)).is_file()
             and not (d := digest(pd.read_csv(path, low_memory=False), f.name)).empty]
    # an empty part would make every column object, and float_format skips objects
    return pd.concat(parts, ignore_index=True) if parts else digest(pd.DataFrame(), "")


@dataclass
class CurveDifference:
    """The largest relative difference between a figure's curves here and in the reference."""
    figure: str
    largest: float = 0.0  # |here - there| / max(|here|, |there|); inf where one side is NaN or missing
    where: str = ""
    missing: list[str] = field(default_factory=list)  # curves or points one side has and the other does not


def curve_differences(here: pd.DataFrame, there: pd.DataFrame) -> list[CurveDifference]:
    """Per figure of either digest, where the curves differ most."""
    keys = ["figure", "panel", "curve", "metric", X]
    both = there.merge(here, on=keys, how="outer", suffixes=("_there", "_here"), indicator=True)
    out = []
    for name, fig in both.groupby("figure", sort=True):
        diff = CurveDifference(str(name))
        for side, label in (("left_only", "only in the reference"), ("right_only", "only here")):
            lost = fig[fig["_merge"] == side]
            diff.missing += [f"{c} ({m}): {label}" for (c, m), _ in lost.groupby(["curve", "metric"], sort=True)]
        matched = fig[fig["_merge"] == "both"]
        a, b = matched["mean_there"].to_numpy(float), matched["mean_here"].to_numpy(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.abs(a - b) / np.maximum(np.abs(a), np.abs(b))
        rel[(a == b) | (np.isnan(a) & np.isnan(b))] = 0.0
        rel[np.isnan(rel)] = np.inf  # one side NaN
        if len(rel) and rel.max() > 0:
            i = int(np.argmax(rel))
            row = matched.iloc[i]
            diff.largest = float(rel[i])
            diff.where = (f"{row['panel']} / {row['curve']}, {row['metric']} at round {row[X]}: "
                          f"{row['mean_there']:.6g} there, {row['mean_here']:.6g} here")
        out.append(diff)
    return out


# --- writing the reference ------------------------------------------------------------------------------------


def small_png(source: Path, width: int = PNG_WIDTH) -> bytes:
    """A figure's PNG shrunk to `width` pixels with a 128-colour palette: a few tens of kB."""
    from PIL import Image

    with Image.open(source) as image:
        image = image.convert("RGB")
        if image.width > width:
            image = image.resize((width, round(image.height * width / image.width)), Image.LANCZOS)
        out = io.BytesIO()
        image.quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
            out, format="PNG", optimize=True)
        return out.getvalue()


def write_reference(paper: str, scale: str, table: RunTable, root: Path = Path("."), docs: Path = DOCS) -> Path:
    """Copy one paper's results at `scale` into its reference folder, replacing what was there."""
    layout = Layout(scale, root)
    ledger = layout.ledger(paper)
    if not ledger.is_file():
        raise ResultsError(f"{ledger} does not exist: run the {scale} scale (make reproduce SCALE={scale}) first")
    verify_ledger(ledger)  # a ledger edited by hand never becomes the reference
    figures = table.paper_figures(paper)
    pngs = {f.name: layout.figure(paper, f.name, "png") for f in figures if f.plot.get("kind") != "table"}
    pngs[CLAIMS_FIGURE] = layout.claims_figure(paper, "png")
    # a table as its markdown: our cells beside the paper's where it gives them (DeFedAvg's Table I)
    tables = {f.name: layout.figure(paper, f.name, "md") for f in figures if f.plot.get("kind") == "table"}
    absent = [str(p) for p in [*pngs.values(), *tables.values()] if not p.is_file()]
    if absent:
        raise ResultsError(f"{paper} at {scale}: figures missing: {', '.join(absent)}")
    run_ids = sorted({rid for f in figures for rid in f.run_ids})
    stamp = {"paper": paper, "scale": scale, **stamp_of(records_of(layout.results, run_ids))}
    folder = reference_dir(paper, scale, root / docs)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    shutil.copyfile(ledger, folder / "ledger.csv")
    shutil.copyfile(layout.ledger(paper, "json"), folder / "ledger.json")
    for name, png in pngs.items():
        write_bytes(folder / f"{name}.png", small_png(png))
    for name, md in tables.items():
        shutil.copyfile(md, folder / f"{name}.md")
    write_text(folder / "digest.csv", digest_of(layout, table, paper).to_csv(index=False, float_format=DIGEST_FLOATS))
    write_json(folder / "stamp.json", {**stamp, DIGEST_SEAL: file_sha256(folder / "digest.csv")})
    return folder


DIGEST_COLUMNS = ["figure", "panel", "curve", "metric", X, "mean"]


def read_digest(source: Path | io.StringIO) -> pd.DataFrame:
    """A digest as written to digest.csv (labels as text, a NaN mean as NaN); a ResultsError, in one line, for a
    file that is not one (a reference edited or cut: `fedrepro compare` reads it)."""
    try:
        found = pd.read_csv(source, dtype={"figure": str, "panel": str, "curve": str, "metric": str},
                            keep_default_na=False, na_values={"mean": ["", "nan", "NaN"]})
    except (OSError, ValueError) as err:
        raise ResultsError(f"{source}: not a readable curve digest ({str(err).splitlines()[0]})") from err
    missing = [c for c in DIGEST_COLUMNS if c not in found]
    if missing or len(found) and not all(pd.api.types.is_numeric_dtype(found[c]) for c in (X, "mean")):
        raise ResultsError(f"{source}: not a curve digest: it needs the columns {', '.join(DIGEST_COLUMNS)} with "
                           f"numbers in {X} and mean" + (f" (missing: {', '.join(missing)})" if missing else ""))
    return found


def as_written(digest_: pd.DataFrame) -> pd.DataFrame:
    """A digest as read back from its digest.csv: what a reference made of the same runs holds."""
    return read_digest(io.StringIO(digest_.to_csv(index=False, float_format=DIGEST_FLOATS)))


def read_reference(paper: str, scale: str, docs: Path = DOCS) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A reference's ledger, verified against the record beside it as rule claims sealed it, and its stamp, once the
    curve digest is the one the stamp seals (an edited digest would make `fedrepro compare` misreport the curves)."""
    folder = reference_dir(paper, scale, docs)
    ledger = read_ledger(folder / "ledger.csv")
    try:
        stamp = json.loads((folder / "stamp.json").read_text())
    except (OSError, ValueError) as err:
        raise ResultsError(f"{folder}: the reference cannot be read ({err})") from err
    digest_ = folder / "digest.csv"
    found = file_sha256(digest_) if digest_.is_file() else "no file"
    if stamp.get(DIGEST_SEAL) != found:
        raise ResultsError(f"{digest_} is not the digest written with its reference: sha256 {found}, stamp.json "
                           f"records {stamp.get(DIGEST_SEAL, 'none')}; write the reference again "
                           f"(`fedrepro docs --from-results {scale} {paper}`) or restore it with git")
    return ledger, stamp


# --- does my run agree? ---------------------------------------------------------------------------------------

CODE_FACTS = ("commits", "numerics")  # a difference here: the code differs
PLATFORM_FACTS = ("devices", "platforms", "packages")  # a difference here: what ran it differs (floats may too)


@dataclass
class Comparison:
    """A paper's results here against its reference at one scale."""
    paper: str
    scale: str
    verdicts: pd.DataFrame  # claim_id, kind, there, here
    curves: list[CurveDifference]
    differences: dict[str, list[str]]  # "code" / "platform" -> "fact: there -> here"

    @property
    def agree(self) -> bool:
        return bool((self.verdicts["there"] == self.verdicts["here"]).all())


def stamp_differences(there: dict[str, Any], here: dict[str, Any]) -> dict[str, list[str]]:
    """What the two sets of runs ran on differently, split into the code's facts and the platform's."""

    def values(stamp: dict[str, Any], fact: str) -> str:
        return ", ".join(stamp.get(fact) or ["not recorded"])

    return {side: [f"{fact}: {values(there, fact)} -> {values(here, fact)}" for fact in facts
                   if set(there.get(fact) or ()) != set(here.get(fact) or ())]
            for side, facts in (("code", CODE_FACTS), ("platform", PLATFORM_FACTS))}


def compare(paper: str, scale: str, table: RunTable, root: Path = Path("."), docs: Path = DOCS) -> Comparison:
    """The verdicts, the curves and what the runs ran on, here (results/<scale>) against the reference."""
    layout = Layout(scale, root)
    if not layout.ledger(paper).is_file():
        raise ResultsError(f"{paper}: no results at {scale} here ({layout.ledger(paper)}); run the {scale} scale first")
    there, stamp = read_reference(paper, scale, root / docs)
    here = read_ledger(layout.ledger(paper))
    verdicts = there[["claim_id", "status"]].merge(here[["claim_id", "status"]], on="claim_id", how="outer",
                                                   suffixes=("_there", "_here"), sort=False)
    verdicts = verdicts.fillna("absent").rename(columns={"status_there": "there", "status_here": "here"})
    run_ids = sorted({rid for f in table.paper_figures(paper) for rid in f.run_ids})
    curves = curve_differences(as_written(digest_of(layout, table, paper)),
                               read_digest(reference_dir(paper, scale, root / docs) / "digest.csv"))
    local = stamp_of(records_of(layout.results, run_ids))
    return Comparison(paper, scale, verdicts, curves, stamp_differences(stamp, local))


def comparison_text(c: Comparison) -> str:
    differ = c.verdicts[c.verdicts["there"] != c.verdicts["here"]]
    lines = [f"{c.paper} at {c.scale}: " + ("the verdicts agree" if c.agree else
             f"{len(differ)} of {len(c.verdicts)} verdicts differ") + f" ({len(c.verdicts)} claims)",
             "  claim  reference  here"]
    lines += [f"{'*' if r.there != r.here else ' '} {r.claim_id:<6} {r.there:<12} {r.here}"
              for r in c.verdicts.itertuples()]
    lines.append("  figures: the largest relative difference between the curves (seed means, reference digest)")
    for d in c.curves:
        shown = "identical" if d.largest == 0 else f"{d.largest:.2g}: {d.where}"
        lines.append(f"  {d.figure:<8} {shown}" + "".join(f"\n           {m}" for m in d.missing))
    for side, facts in c.differences.items():
        lines.append(f"  {side} differs: " + "; ".join(facts) if facts else f"  {side}: the same")
    return "\n".join(lines)
