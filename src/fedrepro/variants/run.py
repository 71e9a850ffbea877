"""`fedrepro variants NAME`: train and judge the variants of config/variants/<name>.yaml, by its kind."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fedrepro.experiments.variant_files import STUDY, load_variants
from fedrepro.variants.study import run_study
from fedrepro.variants.tune import run_tuning


def run_variants(name: str, config_dir: Path = Path("config"), out_dir: Path | None = None,
                 jobs: int = 2) -> pd.DataFrame:
    spec = load_variants(name, config_dir)
    run = run_study if spec["kind"] == STUDY else run_tuning
    return run(spec, config_dir, out_dir, jobs)
