"""Does the regrouped split entropy (``weak_learner=vfdt_regrouped``, docs/speed.md) move Table 3's results?

Runs Table 3's cells of Jung & Tewari (2018) (conf/experiment/table3.yaml: Ada.OLMR and OnlineBMR, 100 VFDTs on 20
random covariates, the authors' importance weights, train then test) on the given data sets and seeds, once with
the exact entropy (``vfdt``, the default) and once regrouped, and prints per cell the mean rank loss of each with
its standard error over the seeds, and whether the regrouped mean lies within one standard error of the exact one.

    python benchmarks/split_entropy_effect.py                          # emotions, scene, yeast; seeds 1-10
    python benchmarks/split_entropy_effect.py --datasets emotions --seeds 3 --gammas 0.1
"""

from __future__ import annotations

import argparse
import statistics
import time

WEAK = ("vfdt", "vfdt_regrouped")


def rank_loss(algorithm: str, dataset: str, seed: int, params: dict) -> float:
    from olb.run import CellSpec, run_cell

    spec = CellSpec(algorithm, dataset, seed=seed, params=params, protocol="train_test", metrics=("rank_loss",))
    return run_cell(spec).stream.metrics["rank_loss"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["emotions", "scene", "yeast"])
    parser.add_argument("--seeds", type=int, default=10, help="seeds 1..S")
    parser.add_argument("--gammas", nargs="+", type=float, default=[0.2, 0.1, 0.01, 0.001], help="OnlineBMR's")
    parser.add_argument("--num-learners", type=int, default=100)
    args = parser.parse_args()
    base = {"num_learners": args.num_learners, "num_covariates": 20, "authors_weights": True}
    cells = [("adaolmr", "Ada.OLMR", {})] + [("onlinebmr", f"OnlineBMR g={g}", {"gamma": g}) for g in args.gammas]
    print(f"{'data set':<10} {'cell':<20} {'exact mean (se)':>20} {'regrouped mean (se)':>20} {'diff/se':>8}  within")
    moved = 0
    start = time.process_time()
    for dataset in args.datasets:
        for algorithm, label, extra in cells:
            losses = {
                weak: [
                    rank_loss(algorithm, dataset, s, {**base, **extra, "weak_learner": weak})
                    for s in range(1, args.seeds + 1)
                ]
                for weak in WEAK
            }
            (m0, se0), (m1, se1) = (
                (statistics.mean(v), statistics.stdev(v) / len(v) ** 0.5 if len(v) > 1 else float("nan"))
                for v in losses.values()
            )
            within = abs(m1 - m0) <= se0
            moved += not within
            same = sum(a == b for a, b in zip(*losses.values()))
            print(
                f"{dataset:<10} {label:<20} {m0:>11.4f} ({se0:.4f}) {m1:>11.4f} ({se1:.4f}) "
                f"{(m1 - m0) / se0 if se0 else 0.0:>8.2f}  {'yes' if within else 'NO'} "
                f"({same}/{args.seeds} seeds identical)",
                flush=True,
            )
    print(f"{moved} cell(s) moved beyond one standard error; {time.process_time() - start:.0f} CPU s")


if __name__ == "__main__":
    main()
