"""Expected results (fedrepro/expected.py): the digest of a figure's curves, where two digests differ, what two sets
of runs ran on differently, and the verdict tables the paper pages render from a committed reference."""

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedrepro.errors import ConfigError, ResultsError
from fedrepro.expected import (DIGEST_FLOATS, DIGEST_POINTS, DIGEST_SEAL, curve_differences, digest, digest_of,
                               read_digest, read_reference, small_png, stamp_differences, stamp_of)
from fedrepro.experiments.runtable import Curve, Figure
from fedrepro.layout import Layout
from fedrepro.paper_docs import current_part, write_docs
from fedrepro.utils.digest import file_sha256
from sealed import seal

REPO = Path(__file__).resolve().parents[2]


def figure_table(rounds: int = 100, seeds: int = 3) -> pd.DataFrame:
    """A figure table as rule aggregate writes it: labels, settings, then the runs' metrics.csv columns."""
    rows = []
    for curve, scale in (("A", 1.0), ("B", 2.0)):
        for seed in range(seeds):
            for r in range(rounds):
                rows.append({"figure": "fig1", "panel": "p", "curve": curve, "run_id": curve * 4, "K": 5,
                             "seed": seed, "round": r, "loss": scale / (r + 1) + seed, "optimum": 0.25})
    return pd.DataFrame(rows)


def test_the_digest_keeps_the_seed_mean_of_each_changing_metric_at_spread_rounds():
    d = digest(figure_table(), "fig1")
    assert set(d["metric"]) == {"loss"}  # K is a setting, seed and round index, the optimum draws no curve
    a = d[d["curve"] == "A"]
    assert len(a) == DIGEST_POINTS and a["round"].iloc[0] == 0 and a["round"].iloc[-1] == 99
    at = a.set_index("round")["mean"]
    assert at[0] == pytest.approx(1.0 + 1.0) and at[99] == pytest.approx(1 / 100 + 1.0)  # mean over seeds 0, 1, 2


def test_a_paper_digest_writes_each_run_once_and_every_mean_at_the_digest_precision(tmp_path: Path) -> None:
    def figure(name: str, kind: str, run_ids: str) -> Figure:
        return Figure("p", name, name, "", "quick", [], {"kind": kind},
                      [Curve("p", rid, "m", rid * 4, {}) for rid in run_ids])

    figures = [figure("fig1", "convergence", "AB"), figure("fig2", "convergence", "A"),
               figure("table1", "table", "AB"), figure("table2", "table", "C")]

    class Table:
        def paper_figures(self, paper: str) -> list[Figure]:
            return figures

    layout = Layout("quick", tmp_path)
    layout.table("p", "fig1").parent.mkdir(parents=True)
    curves = figure_table(rounds=5)
    curves.assign(loss=curves["loss"] / 3).to_csv(layout.table("p", "fig1"), index=False)
    curves.assign(loss=1.0).to_csv(layout.table("p", "fig2"), index=False)  # no metric changes: an empty digest
    for name in ("table1", "table2"):
        curves.assign(figure=name).to_csv(layout.table("p", name), index=False)
    d = digest_of(layout, Table(), "p")
    # Table I's runs are all drawn by fig1, so its curves are fig1's; table2's run C is drawn nowhere else
    assert sorted(set(d["figure"])) == ["fig1", "table2"]
    written = d.to_csv(index=False, float_format=DIGEST_FLOATS)
    assert "0.666666667" in written and "0.6666666666" not in written  # (1/1 + 1) / 3, mean of seeds 0-2


def test_curve_differences_name_the_largest_and_what_one_side_lacks():
    there = digest(figure_table(), "fig1")
    assert [d.largest for d in curve_differences(there, there)] == [0.0]
    here = there.copy()
    here.loc[(here["curve"] == "B") & (here["round"] == 99), "mean"] *= 1.1
    (d,) = curve_differences(here, there)
    assert d.largest == pytest.approx(0.1 / 1.1) and "p / B, loss at round 99" in d.where and d.missing == []
    (d,) = curve_differences(here[here["curve"] == "A"], there)
    assert d.missing == ["B (loss): only in the reference"]
    nan = there.copy()
    nan.loc[0, "mean"] = np.nan
    assert curve_differences(nan, there)[0].largest == np.inf
    assert curve_differences(nan, nan)[0].largest == 0.0  # NaN on both sides: the same curve


def record(commit: str = "a" * 40, cpu: str = "AMD EPYC", numerics: int = 1) -> dict:
    return {"git": {"commit": commit, "dirty": False}, "spec": {"engine": "finite_sum"}, "numerics": numerics,
            "device": {"device": "cpu"}, "platform": {"cpu_model": cpu}, "packages": {"torch": "2.13.0+cpu"}}


def test_stamp_differences_say_whether_the_code_or_the_platform_differs():
    base = stamp_of([record(), record()])
    assert base["runs"] == 2 and base["commits"] == {"a" * 40: 2} and base["numerics"] == {"finite_sum 1": 2}
    assert stamp_differences(base, base) == {"code": [], "platform": []}
    other_cpu = stamp_differences(base, stamp_of([record(cpu="Intel Xeon")]))
    assert other_cpu["code"] == [] and other_cpu["platform"] == ["platforms: AMD EPYC -> Intel Xeon"]
    other_code = stamp_differences(base, stamp_of([record(commit="b" * 40, numerics=2)]))
    assert len(other_code["code"]) == 2 and other_code["platform"] == []


def test_a_figure_is_shrunk_to_a_small_palette_png(tmp_path):
    from PIL import Image

    big = tmp_path / "big.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (600, 1800, 3), dtype=np.uint8)).save(big)
    small = tmp_path / "small.png"
    small.write_bytes(small_png(big, width=900))
    with Image.open(small) as image:
        assert image.size == (900, 300) and image.mode == "P"


def reference(docs: Path, statuses: dict[str, str]) -> None:
    """A committed reference of fedvr at quick, as `fedrepro docs --from-results quick` leaves it: the ledger and
    its record as rule claims sealed them, and a stamp."""
    folder = docs / "fedvr" / "quick"
    folder.mkdir(parents=True)
    kinds = {"C0": "implementation"}
    pd.DataFrame({"claim_id": list(statuses), "kind": [kinds.get(c, "paper") for c in statuses],
                  "status": list(statuses.values()), "cause": ["seeds" if s == "INCONCLUSIVE" else ""
                                                               for s in statuses.values()],
                  "robustness": "", "alternatives": "", "p_pass": ["0.01", "", "0.3"], "p_fail": ["", "", "0.4"],
                  "support": ["", "1.0", ""], "error_rate": "false PASS <= 5%",
                  "measured": ["ours 0.1 | theirs 0.2", "f* 0.0092", "ratio 1.1"],
                  "quote": ["our algorithm converges faster", "the optimal cost is 0.01", "less variance"]}
                 ).to_csv(folder / "ledger.csv", index=False)
    seal(folder / "ledger.csv")
    (folder / "digest.csv").write_text(digest(figure_table(), "fig3").to_csv(index=False))
    (folder / "stamp.json").write_text(json.dumps({**stamp_of([record()]),
                                                   DIGEST_SEAL: file_sha256(folder / "digest.csv")}))


def test_a_page_renders_the_reference_and_check_sees_when_it_changes(tmp_path):
    shutil.copytree(REPO / "config", tmp_path / "config")
    shutil.copytree(REPO / "benchmarks" / "records", tmp_path / "benchmarks" / "records")  # the cost line's
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(REPO / "docs" / "papers" / "fedvr.md", docs / "fedvr.md")
    reference(docs, {"C1": "PASS", "C0": "PASS", "C4": "INCONCLUSIVE"})
    write_docs(["fedvr"], docs, root=tmp_path)
    part = (docs / "fedvr" / "verdicts.md").read_text()
    assert "#### At `quick`" in part
    assert "1 PASS, 0 FAIL, 1 INCONCLUSIVE of 2 paper claims; implementation checks: 1 PASS" in part
    assert "| <a id=\"quick-c1\"></a>C1 | our algorithm converges faster | PASS | - | ours 0.1 \\| theirs 0.2 | p_pass 0.01 |" \
        in part
    assert "Error rates the rules state: false PASS <= 5%." in part  # once, not in every row
    assert ("| <a id=\"quick-c4\"></a>C4 | less variance | INCONCLUSIVE | seeds: more seeds needed; no estimate | ratio 1.1 | "
            "p_pass 0.3, p_fail 0.4 | - |") in part
    assert "Implementation checks: C0 PASS." in part and "| C0 |" not in part
    assert "1 runs at commit aaaaaaa; numerics finite_sum 1; on cpu (AMD EPYC)" in part
    assert write_docs(["fedvr"], docs, check=True, root=tmp_path) == []
    shutil.rmtree(docs / "fedvr" / "quick")
    reference(docs, {"C1": "FAIL", "C0": "PASS", "C4": "INCONCLUSIVE"})  # a new reference, the page not rewritten
    assert write_docs(["fedvr"], docs, check=True, root=tmp_path) == [str(docs / "fedvr" / "verdicts.md"),
                                                                      str(docs / "fedvr.md")]  # the card too


def test_a_note_shows_in_its_claims_row_and_stops_docs_once_its_verdict_moves(tmp_path):
    shutil.copytree(REPO / "config", tmp_path / "config")
    shutil.copytree(REPO / "benchmarks" / "records", tmp_path / "benchmarks" / "records")  # the cost line's
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(REPO / "docs" / "papers" / "fedvr.md", docs / "fedvr.md")
    reference(docs, {"C1": "PASS", "C0": "PASS", "C4": "INCONCLUSIVE"})
    notes = docs / "fedvr" / "notes.yaml"
    notes.write_text("quick:\n  C4: {verdict: INCONCLUSIVE, note: the variance plateaus after round 40}\n"
                     "  C0: {verdict: PASS, note: f* from the data}\n")
    write_docs(["fedvr"], docs, root=tmp_path)
    part = (docs / "fedvr" / "verdicts.md").read_text()
    assert "| p_pass 0.3, p_fail 0.4 | - | the variance plateaus after round 40 |" in part
    assert "- C0: f* from the data" in part
    shutil.rmtree(docs / "fedvr" / "quick")
    reference(docs, {"C1": "PASS", "C0": "PASS", "C4": "FAIL"})  # C4's verdict moved; its note did not
    with pytest.raises(ConfigError, match="quick C4 explains INCONCLUSIVE, the reference ledger says FAIL"):
        write_docs(["fedvr"], docs, check=True, root=tmp_path)
    notes.write_text("paper:\n  C4: {verdict: FAIL, note: x}\n")  # a scale with no reference
    with pytest.raises(ConfigError, match="notes at paper, which has no reference"):
        write_docs(["fedvr"], docs, check=True, root=tmp_path)
    notes.write_text("quick:\n  C4: {verdict: FAILED, note: x}\n")
    with pytest.raises(ConfigError, match="quick C4: expected"):
        write_docs(["fedvr"], docs, check=True, root=tmp_path)


@pytest.mark.parametrize("text", ["a,b\n1,2\n", "figure,panel,curve,metric,round,mean\nf,p,c,loss,x,1\n", "\x00\x01"])
def test_a_digest_that_is_not_one_is_refused_in_one_line(tmp_path, text):
    """`fedrepro compare` read a cut digest.csv into a KeyError: now a ResultsError naming the file."""
    bad = tmp_path / "digest.csv"
    bad.write_text(text)
    with pytest.raises(ResultsError, match="digest.csv: not a") as error:
        read_digest(bad)
    assert "\n" not in str(error.value)
    assert read_digest(io.StringIO(digest(figure_table(), "fig1").to_csv(index=False))).shape[1] == 6


def test_an_edited_digest_stops_the_reference_in_one_line(tmp_path):
    """The probe: digest.csv cut by hand, and `docs --check` passed it; the stamp now seals it, and every reader of
    the reference (the pages, `fedrepro compare`) refuses it, naming the file."""
    reference(tmp_path, {"C1": "PASS", "C0": "PASS", "C4": "INCONCLUSIVE"})
    read_reference("fedvr", "quick", tmp_path)  # as written
    digest_csv = tmp_path / "fedvr" / "quick" / "digest.csv"
    digest_csv.write_text("\n".join(digest_csv.read_text().splitlines()[:-1]) + "\n")
    with pytest.raises(ResultsError, match="digest.csv is not the digest written with its reference") as error:
        read_reference("fedvr", "quick", tmp_path)
    assert "\n" not in str(error.value)
