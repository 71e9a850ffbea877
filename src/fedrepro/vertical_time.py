"""TDCD's simulated latency (paper §5.2) and the iteration form of its claim C1' (docs/papers/tdcd.md R21).

A round of Q local iterations costs t_Q = 3 t_comm + Q t_comp: two hub<->client round trips and one
hub<->hub round trip, each of latency t_comm, plus Q local steps of t_comp each. The authors plot
iteration t at time t t_Q / Q (one interval shifted in their plotting code; we use the real t,
docs/papers/tdcd.md R10).
"""

from __future__ import annotations


def round_time(Q: int, t_comm: float, t_comp: float = 1.0) -> float:
    """t_Q: the simulated time of one round of Q local iterations."""
    return 3 * t_comm + Q * t_comp


def iteration_time(Q: int, t_comm: float, t_comp: float = 1.0) -> float:
    """t_Q / Q: the time one local iteration costs on average (31, 4, 2.5, 2 for Q = 1, 10, 20, 30 at
    t_comm = 10)."""
    return round_time(Q, t_comm, t_comp) / Q


def time_at(t: int | float, Q: int, t_comm: float, t_comp: float = 1.0) -> float:
    """time(t) = t (3 t_comm + Q t_comp) / Q: the x of iteration t on the time axis."""
    return t * round_time(Q, t_comm, t_comp) / Q


def time_win_threshold(Q: int, t_comm: float, t_comp: float = 1.0) -> float:
    """C1': Q local iterations per round reach a target sooner in time than Q = 1 iff n_Q / n_1 is below
    this ratio of per-iteration costs, Q (3 t_comm + t_comp) / (3 t_comm + Q t_comp)."""
    return iteration_time(1, t_comm, t_comp) / iteration_time(Q, t_comm, t_comp)


def time_column(t_comm: float) -> str:
    """The metrics.csv column of the time axis at latency t_comm: time_tc10, time_tc100, time_tc2.5."""
    return f"time_tc{t_comm:g}"
