"""The claims rule's error rates, measured on synthetic seeds with a known truth (fedrepro.claims.calibration):

1. through the checks: for every check kind that tests its seeds (claims.checks.TESTED), at 3, 5 and 10
   seeds, normal and t(3) seed noise, `pool` cells made as figure tables and judged by the check itself;
   `agree` is the share of cells whose Test is the t-test of the effects they were built with;
2. over cells: claims over 1, 4 and 12 cells combined by the ledger's rule, each cell that t-test, on
   `claims` simulated claims per rate (what every kind computes where `agree` is 1); and the false PASS and FAIL
   of claims over 1 and 12 cells under skewed seed noise of mean 0 (calibration.SKEWED: lognormal, exponential,
   bad seeds, the tail on either side), which the stated rates do not cover (benchmarks/seed_skew.py measures the
   shape of the runs' own); and the rates of claims over cells whose seeds a claims file has tested by the exact
   sign test of the typical seed (seed_test: sign; 5, 10 and 20 seeds: at 3 it cannot decide);

Each for the one-sided kinds and for the equivalence kinds (checks.EQUIVALENCE: |effect| < margin by TOST):

    one-sided    false_pass   one cell at effect 0, the others far above it: the claim is false, PASS is an error
                 false_fail   every cell at 0.1 seed SD: the claim is true, FAIL is an error
                 power_<e>    every cell at e seed SD: the share of PASS
    equivalence  false_pass   one cell exactly at its margin of 10 seed SD, the others at 0: PASS is an error
                 false_fail   every cell exactly at its margin of 0.1 seed SD: FAIL is an error (the worst case)
                 power_m<m>   every cell at 0 with a margin of m seed SD: the share of PASS

3. two looks: the adaptive seed plan's rule (claims.sequential: the first look at 3 or 5 seeds at LOOKS[0], a claim
   left open with its seeds_needed within reach of --max-seeds judged again on all of them at LOOKS[1]), the
   one-sided rates of claims over 1, 4 and 12 cells (calibration.sequential_rates), `claims` claims per rate;
   `second`: the share of claims at 1 seed SD that took the second look;
4. whole verdicts: for oscillation_falls (a per-seed Spearman rho, no drawn effect), fedvr's variances across
   Monte Carlo runs (tested on the runs: calibration_verdicts.TESTED_RUNS, 10 and 20 runs, about 0.03 s a claim)
   and, with --mc, the other Monte Carlo kinds of fedvr, claims judged as the ledger judges them (check,
   support.bootstrap, support.decide; claims.calibration_verdicts), at the unit counts the claims use,
   `verdict_pool` claims per rate. The other Monte Carlo kinds are bootstrapped (200 resamples a claim, about
   2 s): --mc measures their boundary and small-effect rates only, and takes about 2 h at --verdict-pool 100 on
   1 core.

    .venv/bin/python benchmarks/calibrate_rule.py                      # every kind (about 25 min on 1 core)
    .venv/bin/python benchmarks/calibrate_rule.py --kinds faster --pool 100
    .venv/bin/python benchmarks/calibrate_rule.py --markdown            # the tables of docs/claims_reference.md

A rate through the checks is a share of `pool` cells (binomial s.e. 1.3 points at 5% with 300); one over cells
a share of `claims` claims (0.2 points with 10,000).
"""

from __future__ import annotations

import argparse

import pandas as pd

from fedrepro.claims.calibration import DIRECTIONAL, EQUIVALENT, KINDS, SKEWED, check_rates, claim_rates, \
    sequential_rates
from fedrepro.claims.calibration_verdicts import TESTED_RUNS, VERDICTS, verdict_rates
from fedrepro.claims.checks import EQUIVALENCE
from fedrepro.claims.checks.inference import ALPHA


SKEWED_TITLE = "skewed seed noise (not what the stated rates rest on), claims over cells"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[3, 5, 10])
    parser.add_argument("--pool", type=int, default=300, help="cells per (kind, seeds, noise, effect)")
    parser.add_argument("--claims", type=int, default=10000, help="claims per rate over cells")
    parser.add_argument("--verdict-pool", type=int, default=400, help="claims per rate of a whole verdict")
    parser.add_argument("--max-seeds", type=int, default=10, help="the seeds of the second look (seed_plan max_seeds)")
    parser.add_argument("--looks", nargs=2, type=float, metavar=("FIRST", "SECOND"),
                        help="other levels of the two looks, to compare (default: claims.sequential.LOOKS)")
    parser.add_argument("--mc", action="store_true", help="also the bootstrapped Monte Carlo kinds (slow)")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = parser.parse_args()
    seeds = tuple(args.seeds)
    one_sided, equivalence = ([k for k in args.kinds if (k in EQUIVALENCE) == e] for e in (False, True))
    tables = {
        "claims over cells": claim_rates(seeds, claims=args.claims),
        SKEWED_TITLE: claim_rates(seeds, cells=(1, 12), noises=SKEWED, claims=args.claims, seed=49,
                                  rates=DIRECTIONAL[:2]),
        "the typical seed by the exact sign test (a claims file's seed_test: sign), claims over cells": claim_rates(
            (5, 10, 20), claims=args.claims, seed=51, seed_test="sign"),
        "equivalence claims over cells": claim_rates(seeds, claims=args.claims, seed=46, rates=EQUIVALENT),
        "two looks (seed_plan adaptive), claims over cells": sequential_rates(
            [n for n in seeds if n < args.max_seeds], args.max_seeds, claims=args.claims,
            **({"looks": tuple(args.looks)} if args.looks else {})),
        "each kind through its check, 1 cell": check_rates(one_sided, seeds, pool=args.pool),
        "each equivalence kind through its check, 1 cell": check_rates(equivalence, seeds, pool=args.pool, seed=47),
        "whole verdicts, 1 cell": verdict_rates(("oscillation_falls",), units=seeds, pool=args.verdict_pool),
        "Monte Carlo variances tested on the runs, whole verdicts": verdict_rates(TESTED_RUNS, pool=args.verdict_pool),
    }
    if args.mc:
        tables["bootstrapped Monte Carlo kinds, whole verdicts"] = verdict_rates(
            [k for k in VERDICTS if k not in ("oscillation_falls", *TESTED_RUNS)], pool=args.verdict_pool, power=False)
    print(f"alpha {ALPHA}; through the checks: {args.pool} cells per rate; over cells: {args.claims} claims per rate\n")
    for title, rates in tables.items():
        if len(rates):
            print(f"## {title}\n")
            print(rates.to_markdown(index=False, floatfmt=".3f") if args.markdown else
                  rates.to_string(index=False, float_format="{:.3f}".format))
            print()
    # a rate above alpha by more than 2.5 binomial standard errors of its share (its sampling error)
    for title, rates in tables.items():
        draws = args.pool if "check" in title else args.verdict_pool if "verdicts" in title else args.claims
        rates["limit"] = ALPHA + 2.5 * (ALPHA * (1 - ALPHA) / draws) ** 0.5
    skewed = tables.pop(SKEWED_TITLE)
    above = skewed[(skewed["false_pass"] > skewed["limit"]) | (skewed["false_fail"] > skewed["limit"])]
    print(f"on skewed seed noise, which the stated rates do not cover: {len(above)} of {len(skewed)} settings above "
          f"{ALPHA:.0%} by more than 2.5 standard errors (false PASS up to {skewed['false_pass'].max():.3f}, "
          f"false FAIL up to {skewed['false_fail'].max():.3f})")
    every = pd.concat(tables.values())
    high = every[(every["false_pass"] > every["limit"]) | (every["false_fail"] > every["limit"])]
    print(f"on the declared (symmetric) noise, rates above {ALPHA:.0%} by more than 2.5 standard errors: {len(high)} of "
          f"{len(every)} settings")
    if len(high):
        print(high.dropna(axis="columns", how="all").to_string(index=False, float_format="{:.3f}".format))
    kinds = every.dropna(subset=["agree"]) if "agree" in every else every.iloc[0:0]
    print(f"kinds whose check is not its effect's test in every cell: "
          f"{sorted(set(kinds.loc[kinds['agree'] < 1, 'kind'])) or 'none'}")


if __name__ == "__main__":
    main()
