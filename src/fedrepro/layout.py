"""Where the pipeline writes: one tree per scale, results/<scale>/, figures/<scale>/ and logs/<scale>/.

Smoke, quick and paper outputs then sit side by side. DVC records each scale's tree as one unit, so pulling one
scale never touches another's files. Runs are stored under their scale as well (results/<scale>/runs/<run_id>):
a run id is the hash of its spec, the same at every scale, but two scales share almost no spec (quick and paper
5 of 581 runs, smoke none), and a shared run store would be one DVC directory that every scale's pull replaces.
Layout("{scale}") gives the workflow's patterns, in which scale is a wildcard. docs/outputs.md maps the files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fedrepro.errors import ConfigError
from fedrepro.schemas import SCALES


@dataclass(frozen=True)
class Layout:
    scale: str
    root: Path = Path(".")

    @property
    def results(self) -> Path:
        return self.root / "results" / self.scale

    @property
    def figures(self) -> Path:
        return self.root / "figures" / self.scale

    @property
    def logs(self) -> Path:
        return self.root / "logs" / self.scale

    @property
    def runs(self) -> Path:
        return self.results / "runs"

    def table(self, paper: str, figure: str) -> Path:
        """The tidy table behind a figure (rule aggregate)."""
        return self.results / paper / f"{figure}.csv"

    def reading_table(self, paper: str, reading: str, alternative: str, figure: str) -> Path:
        """A figure's table under an alternative reading (rule aggregate_reading)."""
        return self.results / paper / "readings" / reading / alternative / f"{figure}.csv"

    def ledger(self, paper: str, ext: str = "csv") -> Path:
        """The claims ledger (csv, html) and its record (json)."""
        return self.results / "claims" / f"{paper}.{ext}"

    def ledger_failure(self, paper: str) -> Path:
        """What rule claims left when it failed (failures.py): Snakemake deletes the ledger, the audit names why."""
        return self.ledger(paper, "failed.json")

    def audit(self, paper: str, ext: str = "html") -> Path:
        return self.results / "audit" / f"{paper}.{ext}"

    def figure(self, paper: str, name: str, ext: str) -> Path:
        return self.figures / paper / f"{name}.{ext}"

    @property
    def variants(self) -> Path:
        """Where `fedrepro variants` writes (variants/spec.py): <name>.csv, <name>.md, <name>/runs, <name>/tables."""
        return self.results / "variants"


def figure_record(drawing: Path) -> Path:
    """Where the sha256 of a figure's files are recorded when they are drawn: figures/<scale>/<paper>/<name>.sha256
    (utils/digest.py write_sha256s), from any of its files (<name>.pdf, <name>.png, <name>.csv, ...)."""
    return drawing.with_suffix(".sha256")


def scales_on_disk(root: Path = Path(".")) -> list[str]:
    """The scales that have a results tree under `root`, smallest first."""
    return [s for s in SCALES if (root / "results" / s).is_dir()]


# Where tunings and studies wrote before they became variants (results/<kind>/<name>*, later
# results/<scale>/<kind>/<name>*): migrate moves them to results/<scale>/variants/<name>*
NAMED = ("tuning", "studies")
# Rules whose logs lie in a scale's tree (logs/<scale>/<rule>/); the data rules' logs stay in logs/, as their
# data is shared by every scale.
SCALE_LOGS = ("train", "aggregate", "plot", "table", "claims", "claims_table", "audit")


def old_layout(root: Path = Path(".")) -> list[Path]:
    """What was written before the per-scale layout (results/runs, results/claims, figures/<paper>, ...)."""
    from fedrepro.schemas import known_papers

    papers = known_papers()
    old = [*(root / "results" / n for n in ["runs", "claims", "audit", *papers]),
           *(root / "figures" / p for p in papers), *(root / "logs" / r for r in SCALE_LOGS)]
    return [p for p in old if p.exists()]


def recorded_scale(root: Path = Path(".")) -> str:
    """The scale that results in the old layout were computed at, as their claims ledgers record it."""
    import pandas as pd

    scales: set[str] = set()
    for ledger in sorted((root / "results" / "claims").glob("*.csv")):
        try:
            scales |= set(pd.read_csv(ledger, usecols=["scale"], dtype=str)["scale"])
        except ValueError:  # no scale column: not a ledger this project wrote
            continue
    if len(scales) != 1:
        found = f"the claims ledgers record {', '.join(sorted(scales))}" if scales else "no claims ledger records one"
        raise ConfigError(f"cannot tell the scale of the results in {root / 'results'}: {found}; "
                          f"give it: fedrepro migrate --scale SCALE")
    return scales.pop()


def migrate(root: Path = Path("."), scale: str | None = None) -> list[tuple[Path, Path]]:
    """Move outputs of the old layout into `scale`'s tree (default: the scale their ledgers record), and each
    tuning's or study's results into the variants of the scale its variants file names (or of the scale whose tree
    holds them), by rename: nothing is copied or retrained, and Snakemake keeps their modification times. Refuses,
    moving nothing, when a destination exists. Returns the moves made."""
    old = old_layout(root)
    named = [p for kind in NAMED for p in sorted((root / "results" / kind).glob("*"))]
    in_scales = [p for s in SCALES for kind in NAMED for p in sorted((Layout(s, root).results / kind).glob("*"))]
    if not old and not named and not in_scales:
        return []
    scale = scale or (recorded_scale(root) if old else None)
    if scale is not None and scale not in SCALES:
        raise ConfigError(f"unknown scale {scale!r}; allowed: {', '.join(SCALES)}")
    moves = [(p, root / p.relative_to(root).parts[0] / scale / Path(*p.relative_to(root).parts[1:])) for p in old]
    for path in named:  # a tuning's or a study's results go to the scale its variants file names
        to = _named_scale(root, path.name.split(".")[0]) or scale
        if to is None:
            raise ConfigError(f"cannot tell the scale of {path}: no config/variants/{path.name.split('.')[0]}.yaml "
                              f"names one; give it: fedrepro migrate --scale SCALE")
        moves.append((path, Layout(to, root).variants / path.name))
    moves += [(path, path.parent.parent / "variants" / path.name) for path in in_scales]
    clash = [str(dest) for _, dest in moves if dest.exists()]
    if clash:
        raise ConfigError(f"cannot migrate: {', '.join(clash)} already exist(s); move or remove them first")
    for source, dest in moves:
        dest.parent.mkdir(parents=True, exist_ok=True)
        source.rename(dest)
    for directory in [root / "results" / kind for kind in NAMED] + [Layout(s, root).results / kind
                                                                     for s in SCALES for kind in NAMED]:
        if directory.is_dir() and not any(directory.iterdir()):
            directory.rmdir()
    return moves


def _named_scale(root: Path, name: str) -> str | None:
    """The scale config/variants/<name>.yaml names, if it exists."""
    from fedrepro.utils.yaml_file import read_yaml

    path = root / "config" / "variants" / f"{name}.yaml"
    if not path.is_file():
        return None
    scale = (read_yaml(path) or {}).get("scale")
    return scale if scale in SCALES else None
