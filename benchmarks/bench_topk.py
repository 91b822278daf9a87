"""Paper 004 (top-k feedback boosting): runtime against Table 4 and weighted rank loss against Tables 1 and 2.

Settings (N, rho, loops per data set, algorithm and scheme) are read from conf/experiment/topk_table2.yaml, i.e.
the paper's Table 5; k = 3 and the App. C.2 heuristics as there; the paper's numbers from
conf/reference/paper_tables.csv, as in the grid's tables. Cells run in parallel worker processes.

    python benchmarks/bench_topk.py                                   # Table 4: runtime, 1 seed, gamma 0.3
    python benchmarks/bench_topk.py --table --seeds 5                 # Table 1 (uniform), best of 4 gamma
    python benchmarks/bench_topk.py --table --exploration single_swap # Table 2
    python benchmarks/bench_topk.py --datasets emotions yeast --algorithms topada --jobs 2

The paper's Table 4 runtimes (seconds, TopOpt/TopAda, uniform exploration): emotions 299/189, scene 415/371,
yeast 334/260, mediamill -/4752, m-reduced 1852/352 (Python 2.7, Monte Carlo potentials, 2020 hardware).
CPU seconds are the figure to compare on a shared machine; wall seconds include waiting for a core.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import yaml

from olb.grid.planning.config import ReferenceConfig
from olb.grid.reporting.references import load_reference, paper_value

CONF = Path(__file__).resolve().parents[1] / "conf" / "experiment" / "topk_table2.yaml"  # both schemes
REFERENCE = ReferenceConfig(paper="004_b3fc671592caef8d")  # conf/reference/paper_tables.csv, as the grid uses


def experiment_entry(algorithm: str, exploration: str) -> dict:
    """The experiment file's entry (Table 5 settings, the paper's name of the column) for one algorithm and scheme."""
    return yaml.safe_load(CONF.read_text())["algorithm"][f"{algorithm}_{exploration[0]}"]  # topopt_u, topada_s, ...


def table5_settings(algorithm: str, exploration: str, dataset: str) -> tuple[dict, int]:
    """(hyperparameters, loops) of the paper's Table 5 for ``algorithm`` on ``dataset``, from the experiment file."""
    entry = experiment_entry(algorithm, exploration)
    params = {k: v for k, v in entry["params"].items() if k != "gamma"}
    params.update(entry["per_dataset"][dataset])
    loops = params.pop("loops")
    return params, loops


def paper_number(algorithm: str, exploration: str, dataset: str, metric: str) -> float:
    """The paper's weighted_rank_loss (Tables 1, 2) or runtime_s (Table 4, uniform only); NaN where it has none."""
    name = experiment_entry(algorithm, exploration)["paper_name"]
    return paper_value(load_reference(REFERENCE), REFERENCE, name, dataset, metric)[0]


def run_one(job: tuple) -> dict:
    from olb.run import CellSpec, run_cell

    algorithm, dataset, seed, params, loops = job
    result = run_cell(CellSpec(algorithm, dataset, seed=seed, params=params, loops=loops))
    return {
        "algorithm": algorithm,
        "dataset": dataset,
        "seed": seed,
        "gamma": params.get("gamma"),
        "loss": result.metrics["rank_loss"],
        "cpu_s": result.stream.cpu_s,
        "wall_s": result.runtime_s,
        "peak_rss_mb": result.stream.peak_rss_mb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["emotions", "scene", "yeast", "m-reduced"])
    parser.add_argument("--algorithms", nargs="+", default=["topopt", "topada"], choices=["topopt", "topada"])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--table", action="store_true", help="losses against Tables 1/2 (TopOpt: best of --gammas)")
    parser.add_argument(
        "--gammas",
        nargs="+",
        type=float,
        default=None,
        help="TopOpt gammas (default: 0.3 for runtime, 0.1 0.2 0.3 0.4 with --table)",
    )
    parser.add_argument("--exploration", default="uniform", choices=["uniform", "single_swap"])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    gammas = args.gammas or ([0.1, 0.2, 0.3, 0.4] if args.table else [0.3])

    jobs = []
    for dataset, algorithm in itertools.product(args.datasets, args.algorithms):
        params, loops = table5_settings(algorithm, args.exploration, dataset)
        for gamma in gammas if algorithm == "topopt" else [None]:
            for seed in range(args.seeds):
                p = dict(params, gamma=gamma) if gamma is not None else dict(params)
                jobs.append((algorithm, dataset, seed, p, loops))
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(run_one, jobs))

    print(f"exploration={args.exploration}, k=3, Table 5 settings, {args.seeds} seed(s), {args.jobs} worker(s)")
    header = (
        f"| {'dataset':<10} | {'algorithm':<9} | {'gamma':>5} | {'loss (mean ± sd)':>17} | {'paper':>5} | "
        f"{'diff':>6} | {'cpu s':>7} | {'wall s':>7} | {'paper s':>7} | {'speed-up':>8} | {'peak MB':>7} |"
    )
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    notes = []
    for dataset, algorithm in itertools.product(args.datasets, args.algorithms):
        groups = {}
        for r in rows:
            if r["dataset"] == dataset and r["algorithm"] == algorithm:
                groups.setdefault(r["gamma"], []).append(r)
        # best of gamma by mean loss (the paper tunes gamma); runtime of that gamma
        gamma, runs = min(groups.items(), key=lambda kv: statistics.fmean(r["loss"] for r in kv[1]))
        losses = [r["loss"] for r in runs]
        mean = statistics.fmean(losses)
        sd = statistics.stdev(losses) if len(losses) > 1 else math.nan
        cpu = statistics.fmean(r["cpu_s"] for r in runs)
        wall = statistics.fmean(r["wall_s"] for r in runs)
        paper = paper_number(algorithm, args.exploration, dataset, "weighted_rank_loss")
        paper_s = paper_number(algorithm, "uniform", dataset, "runtime_s")
        print(
            f"| {dataset:<10} | {algorithm:<9} | {'' if gamma is None else gamma:>5} | {mean:>8.4f} ± {sd:<6.4f} | "
            f"{paper:>5.2f} | {mean - paper:>+6.3f} | {cpu:>7.1f} | {wall:>7.1f} | {paper_s:>7.0f} | "
            f"{paper_s / cpu:>7.1f}x | {max(r['peak_rss_mb'] for r in runs):>7.0f} |"
        )
        if len(groups) > 1:
            each = ", ".join(f"{g}: {statistics.fmean(r['loss'] for r in rs):.4f}" for g, rs in sorted(groups.items()))
            notes.append(f"{algorithm} on {dataset}, mean loss per gamma: {each}")
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
