# Snakemake's clean-up after a failed job, kept off folders it did not make. Snakemake 9.27 ends every run that
# executed jobs with DAG.cleanup_workdir, which removes (os.removedirs) each empty folder of a missing input or
# output. A run's folder that is a symbolic link or a mount point (results/<scale>/runs/<run_id>: training refuses
# the first in one line, and either can be empty when a job failed) cannot be removed that way: Snakemake ended in a
# NotADirectoryError (link) or EBUSY (mount point) traceback after fedrepro's own error. Such a folder is the user's,
# not Snakemake's to remove, so it is left as it is; every other folder is cleaned up as Snakemake does. The patch
# is for the Snakemake pyproject.toml pins: tests/pipeline/test_cleanup.py fails when the pin moves.
import os
from itertools import chain

from snakemake.dag import DAG

if not hasattr(DAG, "cleanup_workdir") or not hasattr(DAG, "is_edit_notebook_job"):
    raise WorkflowError("workflow/rules/cleanup.smk: this Snakemake has no DAG.cleanup_workdir; check how it cleans "
                        "up after a failed job, then update or drop this file")


def removable(folder):
    """An empty folder Snakemake may remove: not a symbolic link, nor a mount point."""
    if os.path.islink(folder) or os.path.ismount(folder):
        return False
    with os.scandir(folder) as entries:
        return next(entries, None) is None


def cleanup_workdir_but_links_and_mounts(dag):
    """DAG.cleanup_workdir of Snakemake 9.27.1, but for folders that are symbolic links or mount points."""
    for job in dag.jobs:
        if dag.is_edit_notebook_job(job):
            continue
        for io_dir in {os.path.dirname(f) for f in chain(job.output, job.input) if not os.path.exists(f)}:
            if os.path.exists(io_dir) and removable(io_dir):
                os.removedirs(io_dir)


DAG.cleanup_workdir = cleanup_workdir_but_links_and_mounts
