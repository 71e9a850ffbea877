"""What each paper costs at `quick` and at the paper scale, as the README's table and each paper page's cost line
say it (paper_docs.py writes both): one source, so the two cannot disagree.

- `quick`: the paper's share of the 2 cores in the measured `make reproduce` (RECORD's `quick`);
- the paper scale: the CPU papers' measured wall time (RECORD's `paper_cpu`), the network papers' GPU-hours priced
  from the GPU rates on record, each card's from its own records (results/gpu_cost.py paper_costs, `fedrepro cost
  --scale paper --gpus 1 --gpu CARD`), one after another in a cell."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from fedrepro.errors import ConfigError

RECORD = Path("benchmarks/records/scale_times.json")


@dataclass(frozen=True)
class Cost:
    quick: str
    paper: str


@dataclass(frozen=True)
class Costs:
    papers: dict[str, Cost]
    reproduce: str  # the whole measured `make reproduce` and when: "57 min in all (2026-11-27, commit ba3bb56)"
    plans: dict[str, str]  # per card on record, `fedrepro cost --scale paper --gpus 1 --gpu CARD`'s table


def duration(seconds: float) -> str:
    """"34 min", "44 s": a measured time as a reader reads it."""
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.0f} min"


def scale_costs(paper_runs: dict[str, dict], root: Path = Path(".")) -> Costs:
    """Each paper's Cost, from RECORD, and its `paper_runs` (the paper scale's run specs) priced at the GPU rates
    on record."""
    from fedrepro.results.gpu_cost import RECORDS, gpu_plan, load_rates, paper_costs, recorded_cards

    try:
        record = json.loads((root / RECORD).read_text())
    except (OSError, ValueError) as err:
        raise ConfigError(f"{root / RECORD}: cannot be read ({err})") from err
    quick = record["quick"]
    records = root / RECORDS
    rates = {card: load_rates(records, card=card) for card in recorded_cards(records)}
    gpu = [paper_costs(paper_runs, card_rates, card) for card, card_rates in rates.items()]
    cpu = record["paper_cpu"]["wall_s"]
    papers = [p for p in quick["job_wall_s"] if not p.startswith("(")]
    return Costs({p: Cost(duration(quick["job_wall_s"][p] / quick["cores"]),
                          "; ".join(card[p].text() for card in gpu) if any(p in card for card in gpu)
                          else f"CPU: {duration(cpu[p])} on {quick['cores']} cores")
                  for p in papers}, f"{duration(quick['wall_s'])} in all ({quick['measured']})",
                 {card: gpu_plan(paper_runs, 1, card_rates, card=card, level=4) for card, card_rates in rates.items()})


def readme_part(costs: Costs) -> str:
    """The README's table of what each paper costs."""
    lines = ["| paper | `quick`: its share of `make reproduce` on 2 cores | `paper` scale |", "|---|---|---|"]
    lines += [f"| `{p}` | {c.quick} | {c.paper} |" for p, c in costs.papers.items()]
    lines += ["", f"`make reproduce` took {costs.reproduce}. The GPU-hours are priced from the GPU rates on record "
                  "(`fedrepro cost --scale paper --gpus N --gpu CARD`; docs/performance.md, \"The paper scale on a "
                  "GPU\")."]
    return "\n".join(lines) + "\n"


def performance_part(costs: Costs) -> str:
    """docs/performance.md's current GPU cost: each card's plan, as `fedrepro cost` prints it (the README's and the
    pages' GPU-hours are its totals)."""
    return "\n".join(f"`fedrepro cost --scale paper --gpus 1 --gpu {card}`:\n\n{plan}"
                     for card, plan in costs.plans.items())


def page_part(paper: str, costs: dict[str, Cost]) -> str:
    """A paper page's cost line: the same cells as the README's row."""
    cost = costs[paper]
    return (f"**Cost.** `quick`: {cost.quick} of the 2 cores in `make reproduce`. The paper scale: {cost.paper} "
            f"(docs/performance.md).\n")
