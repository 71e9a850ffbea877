"""The adaptive seed plan end to end, as `make reproduce SEEDS=adaptive` runs it (Makefile): the first look through
Snakemake, `fedrepro seed-plan`, the second look through Snakemake. On fedvr at the smoke scale (4 Monte Carlo runs a
curve) with max_seeds 12: the claims open for want of seeds within reach get their runs brought to 12, and the
second look decides some of them, while every other claim keeps its first look's verdict."""

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fedrepro.claims.sequential import LOOKS
from fedrepro.verdicts import INCONCLUSIVE
from workflow_copy import BIN, MIRROR, copy_checkout, run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (MIRROR / "MANIFEST.json").exists(), reason=f"no data mirror at {MIRROR}"),
]
MAX_SEEDS = 12


def sh(*cmd: str, cwd: Path) -> str:
    done = run(*cmd, cwd=cwd, env={"FEDREPRO_DATA_MIRROR": str(MIRROR)})
    return done.stdout + done.stderr


def ledger(work: Path) -> pd.DataFrame:
    return pd.read_csv(work / "results" / "smoke" / "claims" / "fedvr.csv", dtype=str,
                       keep_default_na=False).set_index("claim_id")


def test_a_claim_open_for_want_of_seeds_is_planned_more_and_decided_at_the_second_look(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    copy_checkout(work)
    config = yaml.safe_load((work / "config" / "config.yaml").read_text())
    config["max_seeds"]["smoke"] = MAX_SEEDS
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    stage = (BIN / "snakemake", "--cores", "2", "--config", "scale=smoke", "seed_plan=adaptive", "--", "fedvr")

    sh(*stage, cwd=work)
    first = ledger(work)
    said = sh(BIN / "fedrepro", "seed-plan", "--scale", "smoke", cwd=work)
    plan = json.loads((work / "results" / "smoke" / "seed_plan.json").read_text())
    planned = [c["claim"] for c in plan["claims"] if c["planned"]]
    assert planned and f"{len(planned)} of {len(plan['claims'])} claims" in said
    assert all(first.loc[c, "cause"] == "seeds" and int(first.loc[c, "seeds_needed"]) <= MAX_SEEDS for c in planned)
    assert plan["minutes"] <= config["seed_budget_minutes"]["smoke"]
    assert all(r["first_seed"] + r["seeds"] == MAX_SEEDS for r in plan["runs"])  # each run brought to max_seeds

    sh(*stage, cwd=work)
    second = ledger(work)
    record = json.loads((work / "results" / "smoke" / "claims" / "fedvr.json").read_text())["seed_plan"]
    assert record["look"] == 2 and record["planned"] == planned
    decided = [c for c in planned if second.loc[c, "status"] != INCONCLUSIVE]
    assert decided, second.loc[planned, ["status", "p_pass", "p_fail"]]
    assert all(min(float(second.loc[c, "p_pass"]), float(second.loc[c, "p_fail"])) <= LOOKS[1] for c in decided)
    others = [c for c in first.index if c not in planned]
    assert (second.loc[others, "status"] == first.loc[others, "status"]).all()  # seeds added for others change nothing
    # the figure reads every seed of its extended curves and says why in its caption
    fig3 = pd.read_csv(work / "results" / "smoke" / "fedvr" / "fig3.csv")
    extended = {r["extends"] for r in plan["runs"]}
    seeds = fig3.groupby("run_id")["seed"].nunique()
    assert all(seeds[rid] == MAX_SEEDS for rid in set(fig3["run_id"]) & extended)
    assert "Seeds added by the seed plan" in (work / "figures" / "smoke" / "fedvr" / "fig3.html").read_text()
    # the audit rebuilds the second look's ledger from the extended tables (here from config.yaml's seed_plan fixed:
    # the ledger's record says its look), and the plan is kept once judged
    audit = run(BIN / "fedrepro", "audit", "--scale", "smoke", "fedvr", cwd=work, check=False)
    assert audit.returncode == 0, audit.stdout[-3000:] + audit.stderr[-3000:]
    plan_file = work / "results" / "smoke" / "seed_plan.json"
    plan_file.write_text(plan_file.read_text().replace('"minutes"', '"minutes" ', 1))  # a plan not the one judged with
    audit = run(BIN / "fedrepro", "audit", "--scale", "smoke", "fedvr", cwd=work, check=False)
    assert audit.returncode == 1 and "seed_plan.json is not the plan the ledger was judged with" in audit.stdout
    plan_file.write_text(json.dumps(plan, indent=2) + "\n")
    assert "kept" in sh(BIN / "fedrepro", "seed-plan", "--scale", "smoke", cwd=work)
    assert "Nothing to be done" in sh(*stage[:1], "-n", *stage[1:], cwd=work)
