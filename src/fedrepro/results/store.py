"""The name scripts/train.py imports the run files by. The store is experiments/store.py; this name stays because
Snakemake reruns every job of a rule whose script is edited (its `code` trigger is the script's mtime), and a
retrained run would be a new run of the same spec for nothing."""

from fedrepro.experiments.store import RunFiles

__all__ = ["RunFiles"]
