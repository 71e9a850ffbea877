# rule train: one run spec -> results/<scale>/runs/<run_id>/{metrics.csv,run.json}.
from pathlib import Path

from fedrepro.cli import run_step
from fedrepro.experiments.execute import execute_run
from fedrepro.experiments.store import RunFiles

if __name__ == "__main__":  # seed workers are spawned processes, which import this script again
    sm = snakemake  # noqa: F821 (injected by Snakemake)
    workers = sm.config["seed_workers"]
    run_step(
        lambda: execute_run(
            sm.wildcards.run_id,
            dict(sm.params.spec),
            RunFiles(Path(sm.output.metrics).parent),
            prepared=Path(sm.input.prepared),
            data_provenance=[Path(p) for p in sm.input.provenance],
            device=sm.params.device,
            threads=max(1, sm.threads // workers),
            seed_workers=workers,
            log_path=Path(sm.log[0]),
        )
    )
