"""Figure kind `table`: a summary per run as rows x columns, in CSV, Markdown and LaTeX."""

import numpy as np
import pandas as pd
import pytest
import yaml

from fedrepro.errors import ConfigError
from fedrepro.experiments.runtable import Figure, resolve_paper
from fedrepro.schemas import check
from fedrepro.plots import write_table_figure

# time (s) at which each method's accuracy reaches 0.9 (IID) / 0.8 (non-IID), per panel and n
T = {("IID", 10): {"FedAvg": 50.0, "DeFedAvg_IID": 25.0}, ("IID", 20): {"FedAvg": 180.0, "DeFedAvg_IID": 50.0},
     ("non-IID", 10): {"FedAvg": 440.0, "DeFedAvg_IID": None}, ("non-IID", 20): {"FedAvg": 450.0, "DeFedAvg_IID": 145.0}}
TARGETS = {"IID": 0.9, "non-IID": 0.8}
OPTIONS = {"kind": "table", "rows": ["curve"], "columns": ["panel", "n"],
           "value": {"summary": "time_to_target", "metric": "test_accuracy", "target": TARGETS, "higher": True,
                     "x": "virtual_time"}}


def _figure_table() -> pd.DataFrame:
    """Accuracy rising linearly in time to 1.0 at 2 t (never above 0.5 where t is None), 2 seeds."""
    rows = []
    for (panel, n), methods in T.items():
        for method, t in methods.items():
            for seed in range(2):
                for time in np.linspace(0, 1000, 201):  # every 5 s
                    acc = 0.5 * time / 1000 if t is None else min(1.0, TARGETS[panel] * time / t)
                    rows.append({"figure": "table1", "panel": panel, "curve": method, "method": method.lower(),
                                 "run_id": f"{panel}-{n}-{method}", "n": n, "seed": seed, "virtual_time": time,
                                 "test_accuracy": acc, "diverged": False})
    return pd.DataFrame(rows)


def test_a_table_figure_writes_csv_markdown_and_latex(tmp_path):
    figure = Figure("defedavg", "table1", "Table I: time to target", "", "smoke", [], OPTIONS, setting_keys=["n"])
    source = tmp_path / "table1.csv"
    _figure_table().to_csv(source, index=False)
    out = {ext: tmp_path / "figures" / f"table1.{ext}" for ext in ("csv", "md", "tex")}
    write_table_figure(figure, source, out["csv"], out["md"], out["tex"])

    csv = pd.read_csv(out["csv"]).set_index("curve")
    assert list(csv.columns) == ["IID, 10", "IID, 20", "non-IID, 10", "non-IID, 20"]
    assert list(csv.index) == ["FedAvg", "DeFedAvg_IID"]  # the figure's order, not sorted
    assert csv.loc["DeFedAvg_IID", "IID, 20"] == 50.0 and csv.loc["FedAvg", "non-IID, 20"] == 450.0
    assert np.isinf(csv.loc["DeFedAvg_IID", "non-IID, 10"])

    md = out["md"].read_text().splitlines()
    assert md[0] == "**Table I: time to target**"
    assert "virtual_time at which test_accuracy first reaches >= " in md[2] and "scale: smoke" in md[2]
    assert md[4] == "| curve | IID, 10 | IID, 20 | non-IID, 10 | non-IID, 20 |"
    assert md[5] == "|---|---:|---:|---:|---:|"
    assert md[6] == "| FedAvg | 50 | 180 | 440 | 450 |"
    assert md[7] == "| DeFedAvg_IID | 25 | 50 | ∞ | 145 |"

    tex = out["tex"].read_text().splitlines()
    assert tex[0].startswith("% Table I: time to target")
    assert tex[1] == r"\begin{tabular}{lrrrr}"
    assert r"DeFedAvg\_IID & 25 & 50 & $\infty$ & 145 \\" in tex
    assert tex[-1] == r"\end{tabular}"


def test_a_cell_with_two_runs_is_an_error(tmp_path):
    figure = Figure("defedavg", "table1", "T", "", "smoke", [], {**OPTIONS, "columns": ["panel"]},
                    setting_keys=["n"])
    source = tmp_path / "t.csv"
    _figure_table().to_csv(source, index=False)
    with pytest.raises(ValueError, match="several runs in one cell"):
        write_table_figure(figure, source, tmp_path / "a.csv", tmp_path / "a.md", tmp_path / "a.tex")


def _paper(plot: dict) -> dict:
    return {"key": "p", "title": "P", "engine": "finite_sum", "plot": {"kind": "convergence", "y": "loss"},
            "defaults": {"seeds": 1}, "panels": {"a": {}}, "methods": {"m": {}}, "scales": {"smoke": {}, "quick": {},
            "paper": {}}, "figures": {"t1": {"title": "T", "panels": [{"name": "A", "use": "a"}],
                                             "curves": [{"method": "m"}], "plot": plot}}}


def test_table_options_are_checked_at_start_up_and_not_mixed_with_the_papers_plot():
    check(_paper(OPTIONS), "paper.schema.yaml", "p.yaml")
    for bad, expected in (({**OPTIONS, "colums": ["n"]}, "'colums' was unexpected"),
                          ({**OPTIONS, "value": {**OPTIONS["value"], "seeds": "avg"}}, "'avg' is not allowed"),
                          ({**OPTIONS, "value": {k: v for k, v in OPTIONS["value"].items() if k != "higher"}},
                           "'higher' is a required property")):
        with pytest.raises(ConfigError, match=expected):
            check(_paper(bad), "paper.schema.yaml", "p.yaml")
    _, figures = resolve_paper(yaml.safe_load(yaml.safe_dump(_paper(OPTIONS))), "smoke")
    figure = figures[("p", "t1")]
    assert figure.plot == OPTIONS and figure.formats == ("csv", "md", "tex")  # no y from the paper's plot
