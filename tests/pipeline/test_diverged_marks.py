"""plots/common.py mark_diverged: a diverged seed is crossed where it stopped; when its values would more than
double the span of every other value drawn, the axis keeps that span, the cross sits on its edge and the panel's
title says so."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from fedrepro.plots.common import log_y, mark_diverged  # noqa: E402


def _table(wild_last: float) -> pd.DataFrame:
    """Two seeds of a run that converge from 2.3 to 0.5, one seed of another that blows up to `wild_last`."""
    rounds = np.arange(5)
    rows = [{"run_id": "ok", "seed": s, "round": r, "loss": v, "diverged": False}
            for s in (0, 1) for r, v in zip(rounds, np.linspace(2.3, 0.5, 5))]
    rows += [{"run_id": "bad", "seed": 0, "round": r, "loss": v, "diverged": True}
             for r, v in zip(rounds, [2.3, 3.0, wild_last, np.inf, np.nan])]
    return pd.DataFrame(rows)


def _marks(ax):
    return [t.get_text() for t in ax.texts]


@pytest.mark.parametrize("log", [False, True])
def test_a_blown_up_seed_leaves_the_axis_to_the_other_curves(log):
    fig, ax = plt.subplots()
    table = _table(2.4e7)
    for _, run in table.groupby(["run_id", "seed"]):
        ax.plot(run["round"], run["loss"])
    if log:
        log_y(ax)
    note = mark_diverged(ax, table, "loss")
    low, high = ax.get_ylim()
    assert low <= 0.5 and 3.0 < high < 10  # the span of what did not diverge, the bad seed's 3.0 below 2x of it
    assert note == "\n(x: 1 diverged seed off scale, at 2.4e+07)" and _marks(ax) == []
    (cross,) = [line for line in ax.lines if line.get_marker() == "x"]
    assert cross.get_ydata()[0] == pytest.approx(high)  # on the edge
    plt.close(fig)


def test_a_seed_that_stops_within_reach_is_drawn_where_it_stopped():
    fig, ax = plt.subplots()
    table = _table(4.0)
    for _, run in table.groupby(["run_id", "seed"]):
        ax.plot(run["round"], run["loss"])
    before = ax.get_ylim()
    assert mark_diverged(ax, table, "loss") == ""
    assert _marks(ax) == ["diverged"]
    (cross,) = [line for line in ax.lines if line.get_marker() == "x"]
    assert cross.get_ydata()[0] == 4.0 and ax.get_ylim()[1] >= before[1]
    plt.close(fig)


def test_when_every_seed_diverged_nothing_is_clipped():
    fig, ax = plt.subplots()
    table = _table(2.4e7).assign(diverged=True)
    ax.plot(table["round"], table["loss"].where(np.isfinite(table["loss"])))
    assert mark_diverged(ax, table, "loss") == ""
    assert ax.get_ylim()[1] >= 2.4e7 and _marks(ax).count("diverged") == 3
    plt.close(fig)
