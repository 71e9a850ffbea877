# Snakemake's re-evaluation timer, kept to one (docs/performance.md, "Snakemake's own time"). Snakemake 9.27 ends
# every scheduling pass by starting a timer of the rate limiter's timespan (--max-jobs-per-timespan, default 1 s)
# whose pass starts the next one: each finished job adds one more endless chain of passes, and each pass stats
# every input of every ready job. After a few hundred jobs the main process spent 43% of a core on it. The
# timer is there so that jobs the rate limiter held back start once the timespan is over; one pending timer
# does that as well. No public option turns the timer off. The patch is for the Snakemake pyproject.toml pins:
# tests/pipeline/test_scheduling.py fails when the pin moves or the released method no longer needs it.
import threading

from snakemake.scheduling.job_scheduler import JobScheduler

if not hasattr(JobScheduler, "_schedule_reevalutation"):  # (sic: Snakemake's spelling)
    raise WorkflowError("workflow/rules/scheduling.smk: this Snakemake has no JobScheduler._schedule_reevalutation; "
                        "check whether its scheduler still starts a timer per pass, then update or drop this file")


def one_reevaluation_timer(scheduler, delay):
    """JobScheduler._schedule_reevalutation that starts a timer only when none is pending."""
    pending = getattr(scheduler, "_pending_reevaluation", None)
    if pending is not None and pending.is_alive():
        return
    scheduler._pending_reevaluation = threading.Timer(delay, scheduler._open_jobs.release)
    scheduler._pending_reevaluation.start()


JobScheduler._schedule_reevalutation = one_reevaluation_timer
