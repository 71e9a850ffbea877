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

from fedrepro.schemas import SCALES

CLAIMS_FIGURE = "claims"  # figures/<scale>/<paper>/claims.{pdf,png,sha256}: the claims figure's name


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

    def claims_figure(self, paper: str, ext: str) -> Path:
        """The claims figure (rule claims), beside the paper's figures under a name none of them may take."""
        return self.figure(paper, CLAIMS_FIGURE, ext)

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

