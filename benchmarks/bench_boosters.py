"""Speed of paper 000's boosters: seconds per example and per weak learner, against the authors' code.

    python benchmarks/bench_boosters.py                       # emotions + mediamill-shaped synthetic stream
    python benchmarks/bench_boosters.py --datasets emotions --seeds 3

The authors' code, run under Python 3.11 on this machine class, needs about 150 CPU-seconds for Ada.OLMR
on emotions (100 trees) and about 380 for OnlineBMR (gamma 0.1) (docs/authors_code.md).
"""

from __future__ import annotations

import argparse

from olb.run import CellSpec, run_cell

AUTHORS_CPU_S = {("adaolmr", "emotions"): 150.0, ("onlinebmr", "emotions"): 380.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["emotions", "synthetic-mediamill"])
    parser.add_argument("--num-learners", type=int, default=100)
    parser.add_argument("--gamma", type=float, default=0.1)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--authors-weights", action="store_true", help="the authors' per-tree importance scale")
    args = parser.parse_args()
    header = f"{'dataset':<20} {'algorithm':<10} {'examples':>8} {'cpu_s':>8} {'wall_s':>8} {'us/ex/WL':>9} {'ms/ex':>7} {'metric':>8} {'vs authors':>10}"
    print(header)
    print("-" * len(header))
    for dataset in args.datasets:
        cpu = {}
        for algorithm in ("adaolmr", "onlinebmr"):
            params = {"num_learners": args.num_learners, "authors_weights": args.authors_weights}
            if algorithm == "onlinebmr":
                params["gamma"] = args.gamma
            for seed in range(args.seeds):
                result = run_cell(CellSpec(algorithm, dataset, seed=seed, params=params))
                stream = result.stream
                n = sum(p["n_examples"] for p in stream.phases.values())
                cpu_s = stream.cpu_s
                cpu.setdefault(algorithm, []).append(cpu_s)
                ref = AUTHORS_CPU_S.get((algorithm, dataset))
                speedup = f"{ref / cpu_s:9.0f}x" if ref and args.num_learners == 100 else "-"
                metric = next(iter(result.metrics.values()))
                print(
                    f"{dataset:<20} {algorithm:<10} {n:>8} {cpu_s:>8.2f} {result.runtime_s:>8.2f} "
                    f"{1e6 * cpu_s / n / args.num_learners:>9.1f} {1e3 * cpu_s / n:>7.2f} {metric:>8.4f} {speedup:>10}"
                )
        ratio = (sum(cpu["onlinebmr"]) / len(cpu["onlinebmr"])) / (sum(cpu["adaolmr"]) / len(cpu["adaolmr"]))
        print(f"{dataset:<20} OnlineBMR / Ada.OLMR CPU time: {ratio:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
