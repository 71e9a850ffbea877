"""Figure kind `table` with DeFedAvg Table I's options: ">H" for a target never reached, the paper's
values beside ours with ratios, and speed-ups (best baseline / proposed) per group of rows."""

import re

import numpy as np
import pandas as pd
import pytest

from fedrepro.experiments.runtable import Figure
from fedrepro.plots import write_table_figure
from fedrepro.schemas import check
from fedrepro.errors import ConfigError, ResultsError

H = {"fashion_mnist": 880.0, "cifar10": 1400.0}
TARGETS = {("fashion_mnist", "iid"): 0.9, ("fashion_mnist", "classes"): 0.8, ("cifar10", "iid"): 0.7,
           ("cifar10", "classes"): 0.6}
COLUMNS = [("fashion_mnist", 10), ("fashion_mnist", 20), ("cifar10", 10), ("cifar10", 20)]
# (partition, curve) -> time to target per column (None: never within the horizon)
T = {("iid", "FedAvg"): [50, 180, None, 400], ("iid", "AsySG"): [300, 90, None, None],
     ("iid", "DeFedAvg-IID"): [25, 45, 100, None],
     ("classes", "FedAvg"): [440, 450, 900, 980], ("classes", "FedBuff"): [200, 220, 400, None],
     ("classes", "DeFedAvg-nIID"): [100, 150, 320, 490]}
NAMES = {"fashion_mnist": "FMNIST", "cifar10": "CIFAR-10", "iid": "IID", "classes": "non-IID", "partition": "setting"}
SPEEDUP = {"group": "partition", "proposed": {"IID": "DeFedAvg-IID", "non-IID": "DeFedAvg-nIID"}}


def _reference() -> dict:
    """The paper's values: twice ours (ratio 0.5), ">H" where ours never reaches the target, and three
    cells that exercise the bounds."""
    ref = {}
    for (partition, curve), times in T.items():
        row = ref.setdefault(f"{NAMES[partition]}, {curve}", {})
        for (dataset, n), t in zip(COLUMNS, times):
            row[f"{NAMES[dataset]}, {n}"] = f">{H[dataset]:g}" if t is None else 2.0 * t
    ref["IID, FedAvg"]["CIFAR-10, 10"] = 302.12  # ours >1400: ratio > 1400 / 302.12
    ref["IID, AsySG"]["FMNIST, 20"] = ">880"  # ours 90: ratio < 90 / 880
    ref["IID, AsySG"]["FMNIST, 10"] = "600"  # a number written as text
    ref["Nonexistent, row"] = {"FMNIST, 10": 1.0}  # a row absent (e.g. at a reduced scale) is ignored
    return ref


OPTIONS = {"kind": "table", "rows": ["partition", "curve"], "columns": ["dataset", "n"], "never": "horizon",
           "names": NAMES, "value": {"summary": "time_to_target", "metric": "test_accuracy", "higher": True,
                                     "x": "virtual_time", "target": {f"{d}-{p}": v for (d, p), v in TARGETS.items()}}}
SETTINGS = ["dataset", "n", "partition", "time_horizon"]


def _figure_table() -> pd.DataFrame:
    """Accuracy that crosses its panel's target exactly at the time in T (never where None), logged every
    5 s up to the horizon; 2 seeds with the same curve."""
    rows = []
    for (partition, curve), times in T.items():
        for (dataset, n), t in zip(COLUMNS, times):
            target = TARGETS[(dataset, partition)]
            for seed in range(2):
                for time in np.arange(0.0, H[dataset] + 1, 5.0):
                    acc = 0.5 * time / H[dataset] if t is None else target + 0.01 * (time - t) / t
                    rows.append({"figure": "table1", "panel": f"{dataset}-{partition}", "curve": curve,
                                 "method": curve.lower(), "run_id": f"{dataset}-{n}-{partition}-{curve}",
                                 "dataset": dataset, "n": n, "partition": partition, "time_horizon": H[dataset],
                                 "seed": seed, "virtual_time": time, "test_accuracy": acc, "diverged": False})
    return pd.DataFrame(rows)


def _write(tmp_path, table=None, settings=SETTINGS, **options):
    figure = Figure("defedavg", "table1", "Table I: time to target", "", "smoke", [], {**OPTIONS, **options},
                    setting_keys=settings)
    source = tmp_path / "table1.csv"
    (_figure_table() if table is None else table).to_csv(source, index=False)
    out = {ext: tmp_path / f"out.{ext}" for ext in ("csv", "md", "tex")}
    write_table_figure(figure, source, out["csv"], out["md"], out["tex"])
    return out


def test_never_reached_shows_the_runs_horizon_and_every_cell_is_filled(tmp_path):
    out = _write(tmp_path)
    csv = pd.read_csv(out["csv"], dtype=str).set_index(["partition", "curve"])
    assert list(csv.columns) == ["fashion_mnist, 10", "fashion_mnist, 20", "cifar10, 10", "cifar10, 20"]  # raw
    assert csv.notna().all().all()
    assert csv.loc[("iid", "DeFedAvg-IID")].tolist() == ["25.0", "45.0", "100.0", ">1400"]
    assert csv.loc[("classes", "FedBuff"), "cifar10, 20"] == ">1400"
    assert csv.loc[("iid", "AsySG"), "cifar10, 10"] == ">1400"
    md = out["md"].read_text().splitlines()
    assert ">H: not within the run's horizon H" in md[2]
    assert md[4] == "| setting / curve | FMNIST, 10 | FMNIST, 20 | CIFAR-10, 10 | CIFAR-10, 20 |"
    assert md[8] == "| IID, DeFedAvg-IID | 25 | 45 | 100 | >1400 |"
    assert r"IID, DeFedAvg-IID & 25 & 45 & 100 & $>$1400 \\" in out["tex"].read_text()


def test_without_a_horizon_setting_the_horizon_is_the_last_logged_time(tmp_path):
    table = _figure_table().drop(columns="time_horizon")
    table = table[table["virtual_time"] <= 1000]
    out = _write(tmp_path, table, settings=["dataset", "n", "partition"])
    csv = pd.read_csv(out["csv"], dtype=str).set_index(["partition", "curve"])
    assert csv.loc[("iid", "DeFedAvg-IID"), "cifar10, 20"] == ">1000"
    assert csv.loc[("iid", "AsySG"), "cifar10, 10"] == ">1000"


def test_reference_ratios_and_speedups_in_the_long_csv(tmp_path):
    out = _write(tmp_path, reference=_reference(), speedup=SPEEDUP)
    csv = pd.read_csv(out["csv"], dtype=str, keep_default_na=False)
    assert list(csv.columns) == ["partition", "curve", "dataset", "n", "ours", "paper", "ratio", "speedup",
                                 "best_baseline", "paper_speedup", "paper_best_baseline"]
    assert len(csv) == 24 and (csv["ours"] != "").all() and (csv["paper"] != "").all()
    cell = csv.set_index(["partition", "curve", "dataset", "n"]).loc
    assert float(cell[("classes", "FedAvg", "cifar10", "10"), "ratio"]) == 0.5
    assert cell[("iid", "FedAvg", "cifar10", "10"), "ours"] == ">1400"
    assert cell[("iid", "FedAvg", "cifar10", "10"), "ratio"] == f">{1400 / 302.12:.12g}"
    assert cell[("iid", "AsySG", "fashion_mnist", "20"), "ratio"] == f"<{90 / 880:.12g}"
    assert float(cell[("iid", "AsySG", "fashion_mnist", "10"), "ratio"]) == 0.5
    assert cell[("iid", "DeFedAvg-IID", "cifar10", "20"), "ratio"] == ""  # both >H: undefined
    # speed-ups on the proposed rows only: best baseline / proposed, named
    proposed = csv[csv["curve"] == "DeFedAvg-IID"].set_index(["dataset", "n"])
    assert [float(proposed.loc[("fashion_mnist", "10"), "speedup"]),
            float(proposed.loc[("fashion_mnist", "20"), "speedup"])] == [2.0, 2.0]
    assert proposed["best_baseline"].tolist() == ["FedAvg", "AsySG", "", ""]
    assert proposed.loc[("cifar10", "10"), "speedup"] == ">14"  # every baseline >1400, proposed 100
    assert proposed.loc[("cifar10", "20"), "speedup"] == ""  # the proposed method never reaches it
    assert float(proposed.loc[("fashion_mnist", "20"), "paper_speedup"]) == 4.0  # paper: AsySG >880
    assert proposed.loc[("cifar10", "10"), "paper_best_baseline"] == "FedAvg"
    assert float(proposed.loc[("cifar10", "10"), "paper_speedup"]) == pytest.approx(302.12 / 200)
    niid = csv[csv["curve"] == "DeFedAvg-nIID"]
    assert niid["best_baseline"].tolist() == ["FedBuff", "FedBuff", "FedBuff", "FedAvg"]
    assert [float(v) for v in niid["speedup"]] == pytest.approx([2.0, 220 / 150, 1.25, 2.0])
    assert (csv.loc[~csv["curve"].str.startswith("DeFedAvg"), ["speedup", "best_baseline"]] == "").all().all()


def test_reference_and_speedups_in_the_text_tables(tmp_path):
    out = _write(tmp_path, reference=_reference(), speedup=SPEEDUP)
    md = out["md"].read_text()
    sections = md.split("\n*")[1:]
    assert [s.splitlines()[0] for s in sections] == ["ours*", "paper*", "ours / paper*",
                                                     "speed-up: best baseline / proposed (best baseline)*"]
    assert "| IID, AsySG | 600 | >880 | >1400 | >1400 |" in sections[1]
    assert "| IID, FedAvg | 0.5 | 0.5 | >4.634 | 0.5 |" in sections[2]
    assert "| IID, AsySG | 0.5 | <0.1023 | – | – |" in sections[2]
    speed = sections[3].splitlines()
    assert speed[2] == "| setting / values | FMNIST, 10 | FMNIST, 20 | CIFAR-10, 10 | CIFAR-10, 20 |"
    assert speed[4:] == ["| IID, ours | 2 (FedAvg) | 2 (AsySG) | >14 | – |",
                         "| IID, paper | 2 (FedAvg) | 4 (FedAvg) | 1.511 (FedAvg) | – |",
                         "| non-IID, ours | 2 (FedBuff) | 1.467 (FedBuff) | 1.25 (FedBuff) | 2 (FedAvg) |",
                         "| non-IID, paper | 2 (FedBuff) | 1.467 (FedBuff) | 1.25 (FedBuff) | 2 (FedAvg) |"]
    tex = out["tex"].read_text()
    assert tex.count(r"\begin{tabular}{lrrrr}") == 4 and r"\multicolumn{5}{l}{\textbf{ours / paper}} \\" in tex
    assert r"IID, ours & 2 (FedAvg) & 2 (AsySG) & $>$14 & -- \\" in tex


def test_a_speedup_without_reference_and_a_group_free_speedup(tmp_path):
    raw_keys = {"group": "partition", "proposed": {"iid": "DeFedAvg-IID", "classes": "DeFedAvg-nIID"}}
    out = _write(tmp_path, speedup=raw_keys)  # groups named by their raw values
    csv = pd.read_csv(out["csv"], dtype=str, keep_default_na=False)
    assert "paper" not in csv and "paper_speedup" not in csv
    assert csv[csv["curve"] == "DeFedAvg-nIID"]["best_baseline"].tolist() == ["FedBuff", "FedBuff", "FedBuff",
                                                                               "FedAvg"]
    table = _figure_table()
    iid = table[table["partition"] == "iid"]
    out = _write(tmp_path, iid, rows=["curve"], speedup={"proposed": "DeFedAvg-IID"})
    lines = out["md"].read_text().splitlines()
    assert "| ours | 2 (FedAvg) | 2 (AsySG) | >14 | – |" in lines


def test_a_missing_or_bad_reference_cell_is_an_error_naming_it(tmp_path):
    ref = _reference()
    del ref["non-IID, FedBuff"]["CIFAR-10, 20"]
    ref["IID, FedAvg"].pop("FMNIST, 10")
    with pytest.raises(ValueError, match=re.escape("no value for 2 cell(s) that hold a run: ['IID, FedAvg']"
                                                   "['FMNIST, 10'], ['non-IID, FedBuff']['CIFAR-10, 20']")):
        _write(tmp_path, reference=ref)
    ref = _reference()
    ref["IID, FedAvg"]["FMNIST, 10"] = "about 50"
    with pytest.raises(ValueError, match=re.escape("reference['IID, FedAvg']['FMNIST, 10']: 'about 50' is neither")):
        _write(tmp_path, reference=ref)


@pytest.mark.parametrize("options,expected", [
    ({"speedup": {"group": "partition", "proposed": {"IID": "DeFedAvg"}}},
     "speedup proposed 'DeFedAvg' is not a row of group 'IID'; allowed: FedAvg, AsySG, DeFedAvg-IID"),
    ({"speedup": {"group": "dataset", "proposed": {"IID": "DeFedAvg-IID"}}}, "speedup group 'dataset' must be one"),
    ({"speedup": {"group": "partition", "proposed": {"IID": "DeFedAvg-IID", "nonIID": "DeFedAvg-nIID"}}},
     "speedup proposed names no method for group 'non-IID'; it names IID, nonIID"),
    ({"speedup": {"group": "partition", "proposed": "DeFedAvg-IID"}}, "with one"),
    ({"never": "forever"}, "never 'forever'; allowed: inf, horizon"),
    ({"rows": ["setting", "curve"]}, "rows/columns name ['setting'], not label columns"),
    ({"value": {"summary": "final", "metric": "test_accuracy"}, "never": "inf", "speedup": SPEEDUP},
     "speedup is for value summary time_to_target"),
])
def test_bad_options_are_named(tmp_path, options, expected):
    with pytest.raises(ValueError, match=re.escape(expected)):
        _write(tmp_path, **options)


def _paper(plot: dict) -> dict:
    return {"key": "p", "title": "P", "engine": "async", "defaults": {"seeds": 1}, "panels": {"a": {}},
            "methods": {"m": {}}, "scales": {"smoke": {}, "quick": {}, "paper": {}},
            "figures": {"t1": {"title": "T", "panels": [{"name": "A", "use": "a"}], "curves": [{"method": "m"}],
                               "plot": plot}}}


def test_the_schema_takes_the_table_i_options_and_refuses_bad_ones():
    check(_paper({**OPTIONS, "reference": _reference(), "speedup": SPEEDUP}), "paper.schema.yaml", "p.yaml")
    for bad, expected in (({**OPTIONS, "never": "forever"}, "'forever' is not allowed; allowed values: inf, horizon"),
                          ({**OPTIONS, "speedup": {"proposed": "x", "grup": "partition"}}, "'grup' was unexpected"),
                          ({**OPTIONS, "reference": {"IID, FedAvg": {"FMNIST, 10": [1]}}}, "is not of type")):
        with pytest.raises(ConfigError, match=expected):
            check(_paper(bad), "paper.schema.yaml", "p.yaml")


# DeFedAvg Table I as config/papers/defedavg.yaml would give it (paper Table I): the paper's values as reference.
# Labels with a comma must be quoted inside {...} (YAML splits flow mappings at commas; the schema says so)
TABLE_I = """
kind: table
rows: [partition, curve]
columns: [dataset, n]
value: {summary: time_to_target, metric: test_accuracy, higher: true, x: virtual_time,
        target: {fmnist-iid: 0.9, fmnist-niid: 0.8, cifar-iid: 0.7, cifar-niid: 0.6}}
never: horizon
digits: 3
names: {fashion_mnist: FMNIST, cifar10: CIFAR-10, iid: IID, classes: non-IID, partition: setting}
speedup: {group: partition, proposed: {IID: DeFedAvg-IID, non-IID: DeFedAvg-nIID}}
reference:
  IID, FedAvg:          {"FMNIST, 10": 51.89,  "FMNIST, 20": 179.1,  "FMNIST, 40": 184.9,  "FMNIST, 80": 179.83,
                         "CIFAR-10, 10": 302.12, "CIFAR-10, 20": 411.64, "CIFAR-10, 40": 282.51, "CIFAR-10, 80": 287.81}
  IID, FAVANO:          {"FMNIST, 10": 424.25, "FMNIST, 20": 448.89, "FMNIST, 40": 556.25, "FMNIST, 80": ">880",
                         "CIFAR-10, 10": 944.84, "CIFAR-10, 20": 994.19, "CIFAR-10, 40": 1269.1, "CIFAR-10, 80": ">1400"}
  IID, AsySG:           {"FMNIST, 10": 335.16, "FMNIST, 20": 297.57, "FMNIST, 40": 231.22, "FMNIST, 80": 215.38,
                         "CIFAR-10, 10": 501.60, "CIFAR-10, 20": 369.08, "CIFAR-10, 40": 400.92, "CIFAR-10, 80": 345.79}
  IID, DeFedAvg-IID:    {"FMNIST, 10": 26.39,  "FMNIST, 20": 49.26,  "FMNIST, 40": 94.49,  "FMNIST, 80": 99.72,
                         "CIFAR-10, 10": 54.41,  "CIFAR-10, 20": 108.52, "CIFAR-10, 40": 207.45, "CIFAR-10, 80": 154.26}
  non-IID, FedAvg:      {"FMNIST, 10": 437.57, "FMNIST, 20": 447.81, "FMNIST, 40": 211.67, "FMNIST, 80": 443.56,
                         "CIFAR-10, 10": 934.11, "CIFAR-10, 20": 983.46, "CIFAR-10, 40": 1541.2, "CIFAR-10, 80": 1495.0}
  non-IID, FAVANO:      {"FMNIST, 10": 417.21, "FMNIST, 20": 382.01, "FMNIST, 40": 441.85, "FMNIST, 80": ">880",
                         "CIFAR-10, 10": 1332.6, "CIFAR-10, 20": 1374.9, "CIFAR-10, 40": 1713.3, "CIFAR-10, 80": 4751.8}
  non-IID, FedBuff:     {"FMNIST, 10": 198.54, "FMNIST, 20": 218.26, "FMNIST, 40": 604.93, "FMNIST, 80": 422.88,
                         "CIFAR-10, 10": 394.16, "CIFAR-10, 20": 789.63, "CIFAR-10, 40": 2008.8, "CIFAR-10, 80": 1463.5}
  non-IID, DeFedAvg-nIID: {"FMNIST, 10": 103.25, "FMNIST, 20": 144.49, "FMNIST, 40": 196.98, "FMNIST, 80": 236.30,
                         "CIFAR-10, 10": 331.60, "CIFAR-10, 20": 497.51, "CIFAR-10, 40": 684.31, "CIFAR-10, 80": 786.85}
"""


def test_table_i_with_the_papers_own_times_reproduces_its_speedups(tmp_path):
    """Runs that reach the targets exactly at the paper's times: every ratio is 1 (– where both are >H) and
    the speed-ups are those Table I's own times give (best baseline / DeFedAvg)."""
    import yaml

    options = yaml.safe_load(TABLE_I)
    check(_paper(options), "paper.schema.yaml", "p.yaml")
    names = {v: k for k, v in options["names"].items()}
    horizon = {("fashion_mnist", "iid"): 880.0, ("fashion_mnist", "classes"): 880.0, ("cifar10", "iid"): 1400.0,
               ("cifar10", "classes"): 5000.0}
    rows = []
    for row, cells in options["reference"].items():
        partition, curve = (names.get(p, p) for p in row.split(", "))
        for column, paper in cells.items():
            dataset, n = names[column.split(", ")[0]], int(column.split(", ")[1])
            panel = f"{'fmnist' if dataset == 'fashion_mnist' else 'cifar'}-{'iid' if partition == 'iid' else 'niid'}"
            target, H = options["value"]["target"][panel], horizon[(dataset, partition)]
            points = [(0.0, 0.0), (H, target - 0.1)] if isinstance(paper, str) else \
                [(0.0, 0.0), (paper, target), (H, target + 0.01)]
            rows += [{"figure": "table1", "panel": panel, "curve": curve, "method": curve, "run_id": f"{row} {column}",
                      "dataset": dataset, "n": n, "partition": partition, "time_horizon": H, "seed": 0,
                      "virtual_time": t, "test_accuracy": acc, "diverged": False} for t, acc in points]
    out = _write(tmp_path, pd.DataFrame(rows), **options)
    csv = pd.read_csv(out["csv"], dtype=str, keep_default_na=False)
    assert len(csv) == 64
    never = csv["paper"].str.startswith(">")
    assert (csv.loc[never, "ours"] == csv.loc[never, "paper"]).all() and never.sum() == 3
    assert (csv.loc[~never, "ours"].astype(float) == csv.loc[~never, "paper"].astype(float)).all()
    assert set(csv["ratio"]) == {"1.0", ""} and (csv["ratio"] == "").sum() == 3  # FAVANO >880, >880, >1400
    md = out["md"].read_text()
    assert ("| IID, paper | 1.97 (FedAvg) | 3.64 (FedAvg) | 1.96 (FedAvg) | 1.8 (FedAvg) | 5.55 (FedAvg) "
            "| 3.4 (AsySG) | 1.36 (FedAvg) | 1.87 (FedAvg) |") in md
    assert ("| non-IID, paper | 1.92 (FedBuff) | 1.51 (FedBuff) | 1.07 (FedAvg) | 1.79 (FedBuff) | 1.19 (FedBuff) "
            "| 1.59 (FedBuff) | 2.25 (FedAvg) | 1.86 (FedBuff) |") in md
    ours = [line for line in md.splitlines() if line.startswith(("| IID, ours", "| non-IID, ours"))]
    assert [line.replace("ours", "paper") in md for line in ours] == [True, True]  # ours = the paper's here


def test_at_a_scale_that_maps_n_the_reference_is_looked_up_at_the_papers_n(tmp_path):
    """Quick scale: n = 10 of 100 clients becomes 2 of 20 (a scale's `values`); the table's paper column
    n_paper = 10 still gives the reference of our n = 2 column."""
    table = _figure_table()
    table["n_paper"] = table["n"]
    table["n"] = table["n"].map({10: 2, 20: 4})
    figure = Figure("defedavg", "table1", "Table I", "", "quick", [], {**OPTIONS, "reference": _reference()},
                    setting_keys=SETTINGS, paper_keys=["n"])
    source = tmp_path / "table1.csv"
    table.to_csv(source, index=False)
    out = {ext: tmp_path / f"out.{ext}" for ext in ("csv", "md", "tex")}
    write_table_figure(figure, source, out["csv"], out["md"], out["tex"])
    cell = pd.read_csv(out["csv"], dtype=str).set_index(["partition", "curve", "dataset", "n"]).loc
    assert float(cell[("classes", "FedAvg", "cifar10", "2"), "paper"]) == 2.0 * 900
    assert float(cell[("classes", "FedAvg", "cifar10", "2"), "ratio"]) == 0.5
    with pytest.raises(ValueError, match="reference has no value"):  # without its paper column, n = 2 is no column
        table.drop(columns="n_paper").to_csv(source, index=False)
        write_table_figure(figure, source, out["csv"], out["md"], out["tex"])
    table.loc[table["n"] == 2, "n_paper"] = [10, 5] * (len(table[table["n"] == 2]) // 2)
    table.to_csv(source, index=False)
    with pytest.raises(ResultsError, match="n = 2 stands for several of the paper's values"):
        write_table_figure(figure, source, out["csv"], out["md"], out["tex"])
