"""Human review as a sample design: coverage, labels saved by an active design, the queue
order flagged, and the planner's predictions, on simulated suites.

Each suite has ``C`` cases (20, 60 and 200) of ``m`` repeats. A case is easy (70%) or hard
(30%): its true human pass rate is Beta(4, 1.5) or Beta(3, 3) (the suite's human rate, the
truth every interval is checked against, is 0.7 x 4/5.5 + 0.3 x 0.5 = 0.659), and the judge
errs on 5% of an easy case's samples and on 40% of a hard one's. The judge is graded: its
score sits 0.3-0.5 from the threshold on easy samples and 0-0.2 on hard ones, so its
uncertainty (:func:`score_uncertainty`) tells the hard samples apart, as a real judge's
borderline scores would.

Every design is the library's (:func:`design_order`, :func:`active_sizes`), every estimate
is :func:`evalnb.analysis._ppi.estimate_rows` (the body of :func:`evalnb.ppi_rate`) on the
weights the design gives, and every plan is :func:`evalnb.analysis._plan.plan_rows` (the body
of :func:`evalnb.review_plan`). ``R`` replicates per suite (default 1000): each draws a suite,
a design's order, and reads its prefixes of 20, 40, 80 and 160 labels (a prefix of one order,
as a reviewer who stops there would have).

    nice -n 10 .venv/bin/python benchmarks/review.py [--replicates 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalnb.analysis._plan import plan_rows
from evalnb.analysis._ppi import estimate_rows
from evalnb.analysis._sampling import (
    POPULATION,
    DesignRead,
    active_sizes,
    design_order,
    read_design,
    score_uncertainty,
)

TRUTH = 0.7 * 4 / 5.5 + 0.3 * 0.5
SUITES = ((20, 10), (60, 5), (200, 3))
LABELS = (20, 40, 80, 160)
DESIGNS = ("random", "stratified", "active")
FINE = tuple(range(10, 161, 10))
#: Replicates behind the width curves the label savings are read from.
CURVE_REPLICATES = 300


def suite(rng: np.random.Generator, cases: int, repeats: int) -> dict[str, np.ndarray]:
    """One simulated suite: per sample its case, human label, judge outcome and score."""
    hard = rng.random(cases) < 0.3
    rate = np.where(hard, rng.beta(3, 3, cases), rng.beta(4, 1.5, cases))
    case = np.repeat(np.arange(cases), repeats)
    human = rng.random(cases * repeats) < rate[case]
    error = np.where(hard, 0.4, 0.05)[case]
    judge = np.where(rng.random(cases * repeats) < error, ~human, human)
    distance = np.where(
        hard[case], rng.uniform(0.0, 0.2, len(case)), rng.uniform(0.3, 0.5, len(case))
    )
    score = 0.5 + np.where(judge, distance, -distance)
    return {"case": case, "human": human, "judge": judge, "score": score}


def ordering(design: str, data: dict[str, np.ndarray], seed: int):
    n = len(data["case"])
    if design == "stratified":
        return design_order(n, "stratified", seed=seed, strata=data["case"])
    if design == "active":
        need = score_uncertainty(data["score"], data["judge"].astype(float))
        sizes = active_sizes(need, data["case"], floor=0.1)
        return design_order(n, "active", seed=seed, sizes=sizes)
    return design_order(n, design, seed=seed)


def prefix_rows(data, order, labels: int, experiment: int) -> pd.DataFrame:
    """The per-sample rows ppi_rate reads after the first ``labels`` of ``order``."""
    n = len(data["case"])
    taken = order.order[:labels]
    human = np.full(n, np.nan)
    human[taken] = data["human"][taken]
    weight = np.zeros(n)
    weight[taken] = 1.0 / order.inclusion(labels)[taken]
    case = data["case"].astype(np.int64) + experiment * 10_000
    return pd.DataFrame(
        {
            "experiment": experiment,
            "case_id": case,
            "judge": data["judge"].astype(float),
            "human": human,
            "weight": weight,
            "size": order.size,
            "unit": case,
        }
    )


def run_cells(replicates: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Coverage and width per (suite, design, labels), the fine width curves, and the plans."""
    cells, curves, plans = [], [], []
    read = DesignRead("random", POPULATION, np.ones(0), 0, "")
    for cases, repeats in SUITES:
        rng = np.random.default_rng([seed, cases])
        suites = [suite(rng, cases, repeats) for _ in range(replicates)]
        for design in DESIGNS:
            orders = [ordering(design, s, r) for r, s in enumerate(suites)]
            fine = set(FINE) if design != "stratified" else set()
            for labels in sorted(set(LABELS) | fine):
                count = replicates if labels in LABELS else min(replicates, CURVE_REPLICATES)
                pairs = list(zip(suites, orders, strict=True))[:count]
                rows = pd.concat(
                    [prefix_rows(s, o, labels, r) for r, (s, o) in enumerate(pairs)],
                    ignore_index=True,
                )
                out = estimate_rows(rows, read, ["experiment"], "judge", 0.95)
                width = (out["high"] - out["low"]).to_numpy()
                curves.append(
                    {"cases": cases, "design": design, "labels": labels, "width": np.nanmean(width)}
                )
                if labels in LABELS:
                    covered = (out["low"] <= TRUTH) & (out["high"] >= TRUTH)
                    cells.append(
                        {
                            "cases": cases,
                            "repeats": repeats,
                            "design": design,
                            "labels": labels,
                            "coverage": covered.mean(),
                            "with interval": np.isfinite(width).mean(),
                            "half-width": np.nanmean(width) / 2,
                        }
                    )
            plans += plan_check(suites, orders, cases, design)
    return pd.DataFrame(cells), pd.DataFrame(curves), pd.DataFrame(plans)


def plan_check(suites, orders, cases: int, design: str, plans_per_cell: int = 300) -> list[dict]:
    """The planner from a pilot of 20 and of 40 labels against the realised half-width."""
    out = []
    for pilot in (20, 40):
        predicted = {n: [] for n in LABELS if n > pilot}
        realised = {n: [] for n in LABELS if n > pilot}
        for s, o in zip(suites[:plans_per_cell], orders, strict=False):
            rows = prefix_rows(s, o, pilot, 0)
            read = DesignRead(design, POPULATION, np.ones(0), pilot, "")
            plan = plan_rows(rows, read, [], "judge", width=None, labels=list(predicted))
            for n, half in zip(plan["labels"], plan["half_width"], strict=True):
                predicted[n].append(half)
                later = estimate_rows(prefix_rows(s, o, n, 0), read, [], "judge", 0.95)
                realised[n].append(float((later["high"] - later["low"]).iat[0] / 2))
        for n in predicted:
            out.append(
                {
                    "cases": cases,
                    "design": design,
                    "pilot": pilot,
                    "labels": n,
                    "predicted": np.nanmean(predicted[n]),
                    "realised": np.nanmean(realised[n]),
                }
            )
    return out


def savings(curves: pd.DataFrame) -> pd.DataFrame:
    """Labels an active review needs for the random review's mean width at 40, 80, 160."""
    rows = []
    for cases, group in curves.groupby("cases"):
        random = group[group["design"] == "random"].set_index("labels")["width"]
        active = group[group["design"] == "active"].sort_values("labels")
        for labels in (40, 80, 160):
            target = random[labels]
            # widths fall as labels grow: interpolate the labels at which active reaches it
            needed = float(
                np.interp(-target, -active["width"].to_numpy(), active["labels"].to_numpy())
            )
            reached = active["width"].min() <= target
            rows.append(
                {
                    "cases": cases,
                    "random labels": labels,
                    "random width": target,
                    "active labels for it": needed if reached else np.nan,
                    "fewer labels": 1 - needed / labels if reached else np.nan,
                }
            )
    return pd.DataFrame(rows)


def queue_flag(seed: int) -> pd.DataFrame:
    """Labels taken in queue order: what the library says of them, and what an interval
    that took them as a random sample would cover."""
    rows = []
    for cases, repeats in SUITES:
        rng = np.random.default_rng([seed, cases, 7])
        covered, flagged = [], []
        for r in range(300):
            s = suite(rng, cases, repeats)
            queue = design_order(len(s["case"]), "queue")
            for labels in LABELS:
                verdicts = pd.DataFrame({"design": "queue", "seed": 0, "rank": np.arange(labels)})
                read = read_design(verdicts, len(s["case"]))
                flagged.append(read.scope != POPULATION)
                naive = DesignRead("random", POPULATION, np.ones(0), labels, "")
                plain = prefix_rows(s, design_order(len(s["case"]), "random", seed=r), labels, 0)
                taken = queue.order[:labels]
                plain["human"] = np.nan
                plain.loc[taken, "human"] = s["human"][taken].astype(float)
                plain["weight"] = np.where(plain["human"].notna(), 1.0, 0.0)
                out = estimate_rows(plain, naive, [], "judge", 0.95).iloc[0]
                covered.append(out["low"] <= TRUTH <= out["high"])
        rows.append(
            {
                "cases": cases,
                "flagged (no population interval)": np.mean(flagged),
                "coverage if taken as random": np.mean(covered),
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    started = time.perf_counter()
    cells, curves, plans = run_cells(args.replicates, args.seed)
    pd.set_option("display.width", 200)
    print(f"truth {TRUTH:.4f}; {args.replicates} replicates per cell\n")
    table = cells.pivot_table(
        index=["cases", "repeats", "labels"], columns="design", values="coverage"
    )
    print("coverage of the 95% interval\n" + table.round(3).to_string() + "\n")
    widths = cells.pivot_table(index=["cases", "labels"], columns="design", values="half-width")
    print("mean half-width\n" + widths.round(4).to_string() + "\n")
    print("active vs random\n" + savings(curves).round(3).to_string(index=False) + "\n")
    plans["ratio"] = plans["predicted"] / plans["realised"]
    print("planner: predicted / realised half-width\n" + plans.round(4).to_string(index=False))
    print("\nqueue order\n" + queue_flag(args.seed).round(3).to_string(index=False))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
