"""workflow/rules/scheduling.smk: Snakemake's scheduler keeps one pending re-evaluation timer, where the
unpatched one starts a timer per scheduling pass (each a chain of passes without end). The patch replaces a private
method, so it holds for the Snakemake that pyproject.toml pins, and only while that one still needs it; no public
option turns the timer off (--max-jobs-per-timespan only lengthens it: docs/performance.md)."""

import re
import threading
import time
from pathlib import Path

import snakemake
from snakemake.scheduling.job_scheduler import JobScheduler

ROOT = Path(__file__).parents[2]
PATCH = ROOT / "workflow" / "rules" / "scheduling.smk"
RELEASED = JobScheduler._schedule_reevalutation  # as Snakemake ships it (sic: its spelling)


class Scheduler:
    """What the re-evaluation touches of a JobScheduler: the semaphore whose release starts a pass."""

    def __init__(self):
        self._open_jobs = threading.Semaphore(0)


def passes(scheduler: Scheduler) -> int:
    n = 0
    while scheduler._open_jobs.acquire(blocking=False):
        n += 1
    return n


def test_many_passes_leave_one_timer_and_a_fired_timer_makes_room(monkeypatch):
    # (setattr fails first if an upgrade renamed the method; so does the workflow's start)
    monkeypatch.setattr(JobScheduler, "_schedule_reevalutation", JobScheduler._schedule_reevalutation)
    exec(PATCH.read_text(), {"WorkflowError": RuntimeError})
    scheduler = Scheduler()
    for _ in range(20):  # 20 passes in a row, as 20 finished jobs make them
        JobScheduler._schedule_reevalutation(scheduler, 0.1)
    time.sleep(0.4)
    assert passes(scheduler) == 1  # unpatched: 20
    JobScheduler._schedule_reevalutation(scheduler, 0.1)  # the fired timer's pass starts the next one
    time.sleep(0.4)
    assert passes(scheduler) == 1


def test_the_patched_snakemake_is_the_pinned_one_and_still_starts_a_timer_per_pass():
    # an upgrade of the pin fails here first: check its scheduler, then update or drop scheduling.smk
    pinned = re.search(r'"snakemake==([^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert snakemake.__version__ == pinned
    scheduler = Scheduler()
    for _ in range(20):
        RELEASED(scheduler, 0.1)
    time.sleep(0.4)
    assert passes(scheduler) == 20  # the patch's reason: were this 1, Snakemake would no longer need it
