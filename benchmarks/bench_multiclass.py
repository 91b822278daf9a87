"""Speed of paper 001's boosters: OnlineMBBM's cost matrices against the authors' Monte Carlo, and runtimes.

    python benchmarks/bench_multiclass.py costs                   # cost matrices: exact+memo vs Monte Carlo
    python benchmarks/bench_multiclass.py costs --datasets cars --examples 300
    python benchmarks/bench_multiclass.py runtime                 # one seed per data set and algorithm
    python benchmarks/bench_multiclass.py runtime --datasets balance cars --algorithms adaolm onlinembbm

``costs`` runs OnlineMBBM (100 trees, gamma 0.1) on the first examples of a data set, records every cost
matrix request (votes s^{i-1}, horizon n) the booster makes, and replays the requests through
  * exact: olb's memoized exact potentials (``MBBMCosts``, a fresh cache),
  * authors: the authors' estimator (``onlineAdaptive.py``): each potential phi^r_n(s + e_l) from M = 100
    multinomial draws in a Python loop, memoized on (n, s_r, sorted other scores) as in their code,
  * mc-vec: the same M = 100 estimate vectorized in numpy, without memo (a stronger baseline),
and prints the CPU time per example and per cost matrix of the exact method over all recorded examples, then
(after "|") the CPU ms per example of the three methods on the first examples (default all), each from an
empty cache,
the authors' time over ours, and the largest error of the authors' Monte Carlo entries against the exact
ones (mean and max over the matrices).

``runtime`` runs one full prequential stream per data set and algorithm (``run_cell``) and prints the
accuracy on the last 20%, the CPU and wall time and the CPU ms per example beside the paper's Table 1
runtimes (the authors' Python 2.7 code on a 2017 machine; only the orders of magnitude compare). On a
shared machine the CPU time is the figure to trust.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import yaml

from olb.data import load_dataset
from olb.grid.planning.config import ReferenceConfig
from olb.grid.reporting.references import load_reference, paper_value
from olb.learners.boosting.multiclass import MBBMCosts, OnlineMBBM
from olb.learners.boosting.potentials import baseline
from olb.run import CellSpec, run_cell

EXPERIMENT = Path(__file__).resolve().parents[1] / "conf" / "experiment" / "multiclass_table1.yaml"
REFERENCE = ReferenceConfig(paper="001_d785bc6f4ee46b6e", table="Table 1")  # conf/reference/paper_tables.csv


def paper_runtime_s(algorithm: str, dataset: str) -> float:
    """The paper's Table 1 runtime (s) of ``algorithm`` on ``dataset``, found by the experiment's column name."""
    name = yaml.safe_load(EXPERIMENT.read_text())["algorithm"][algorithm]["paper_name"]
    return paper_value(load_reference(REFERENCE), REFERENCE, name, dataset, "runtime_s")[0]


DATASETS = ("balance", "mice", "cars", "mushroom", "nursery", "movement")


# ------------------------------------------------------------------ cost matrices
class _Recorder:
    """Wraps an MBBMCosts and remembers every request, grouped by example."""

    def __init__(self, inner: MBBMCosts):
        self.inner, self.requests = inner, []

    def get(self, s, n):
        self.requests[-1].append((s.copy(), n))
        return self.inner.get(s, n)


def record_requests(dataset: str, examples: int, gamma: float, seed: int = 0) -> list[list[tuple[np.ndarray, int]]]:
    data = load_dataset(dataset)
    model = OnlineMBBM(data.n_features, data.n_labels, seed=seed, num_learners=100, gamma=gamma, authors_weights=True)
    model.costs = recorder = _Recorder(MBBMCosts(data.n_labels, gamma))
    order = np.random.default_rng(seed).permutation(data.n_examples)[:examples]
    for row in order:
        recorder.requests.append([])
        x = data.X[row]
        model.predict_one(x)
        model.learn_one(x, data.Y[row])
    return recorder.requests


class AuthorsMonteCarlo:
    """The authors' potential estimate: M draws in a Python loop, memoized per potential value."""

    def __init__(self, k: int, gamma: float, samples: int = 100, seed: int = 0):
        self.k, self.M = k, samples
        self.biased = baseline(k, [0], gamma)  # the true label is moved to position 0
        self.memo: dict = {}
        np.random.seed(seed)

    def potential(self, r: int, n: int, s: np.ndarray) -> float:
        others = sorted(np.delete(s, r).tolist())
        key = (n, s[r], tuple(others))
        if key not in self.memo:
            state = np.array([s[r]] + others, float)
            count = 0
            for _ in range(self.M):
                x = np.random.multinomial(n, self.biased) + state
                top = x[0]
                x[0] = -np.inf
                count += top <= x.max()
            self.memo[key] = count / self.M
        return self.memo[key]

    def get(self, s: np.ndarray, n: int) -> np.ndarray:
        k = self.k
        C = np.empty((k, k))
        for r in range(k):
            for l in range(k):
                e = np.zeros(k)
                e[l] = 1
                C[r, l] = self.potential(r, n, s + e)
        return C


def vectorized_monte_carlo(s: np.ndarray, n: int, gamma: float, samples: int, rng) -> np.ndarray:
    k = len(s)
    C = np.empty((k, k))
    for r in range(k):
        X = rng.multinomial(n, baseline(k, [r], gamma), size=(k, samples))
        final = s + np.eye(k)[:, None, :] + X
        C[r] = (np.delete(final, r, axis=2).max(axis=2) >= final[:, :, r]).mean(axis=1)
    return C


def bench_costs(datasets, examples: int, gamma: float, authors_examples: int) -> None:
    print(f"OnlineMBBM cost matrices, N = 100, gamma = {gamma}: CPU time per example (ms) and per matrix (us)")
    header = (
        f"{'dataset':<10} {'k':>3} {'examples':>8} {'matrices':>9} {'computed':>9} {'exact ms/ex':>12} "
        f"{'us/matrix':>10} | {'first':>5} {'exact':>7} {'authors':>9} {'mc-vec':>8} {'speedup':>8} "
        f"{'MC err mean/max':>16}"
    )
    print(header)
    print("-" * len(header))
    for name in datasets:
        requests = record_requests(name, examples, gamma)
        k = len(requests[0][0][0])
        n_mat = sum(len(r) for r in requests)
        exact = MBBMCosts(k, gamma)
        t = time.process_time()
        for example in requests:
            for s, n in example:
                exact.get(s, n)
        exact_s = time.process_time() - t
        sub = requests[: authors_examples or len(requests)]
        fresh = MBBMCosts(k, gamma)
        t = time.process_time()
        for example in sub:
            for s, n in example:
                fresh.get(s, n)
        exact_sub_s = (time.process_time() - t) / len(sub)
        authors = AuthorsMonteCarlo(k, gamma)
        t = time.process_time()
        errors = []
        for example in sub:
            for s, n in example:
                errors.append(np.abs(authors.get(s, n) - fresh.get(s, n)[0]).max())
        authors_s = (time.process_time() - t) / len(sub)
        rng = np.random.default_rng(0)
        t = time.process_time()
        for example in sub:
            for s, n in example:
                vectorized_monte_carlo(s.astype(float), n, gamma, 100, rng)
        mc_s = (time.process_time() - t) / len(sub)
        per_ex = exact_s / len(requests)
        print(
            f"{name:<10} {k:>3} {len(requests):>8} {n_mat:>9} {exact.computed:>9} {1e3 * per_ex:>12.3f} "
            f"{1e6 * exact_s / n_mat:>10.1f} | {len(sub):>5} {1e3 * exact_sub_s:>7.2f} {1e3 * authors_s:>9.1f} "
            f"{1e3 * mc_s:>8.1f} {authors_s / exact_sub_s:>7.1f}x {np.mean(errors):>7.3f}/{np.max(errors):.3f}"
        )


# ------------------------------------------------------------------ end to end
def bench_runtime(datasets, algorithms, gamma: float, seed: int, authors_weights: bool) -> None:
    print(f"Full prequential streams, 100 trees, seed {seed}, authors_weights={authors_weights}")
    header = (
        f"{'dataset':<10} {'algorithm':<11} {'examples':>8} {'accuracy':>9} {'cpu_s':>8} {'wall_s':>8} "
        f"{'ms/ex':>7} {'paper_s':>8} {'paper/cpu':>10} {'paper/wall':>10}"
    )
    print(header)
    print("-" * len(header))
    for name in datasets:
        for algorithm in algorithms:
            params = {"num_learners": 100}
            if algorithm in ("adaolm", "onlinembbm"):
                params["authors_weights"] = authors_weights
            if algorithm == "onlinembbm":
                params["gamma"] = gamma
            result = run_cell(CellSpec(algorithm, name, seed=seed, params=params))
            n = sum(p["n_examples"] for p in result.stream.phases.values())
            paper = paper_runtime_s(algorithm, name)
            paper = None if math.isnan(paper) else int(paper)
            cpu = result.stream.cpu_s
            by_cpu = f"{paper / cpu:9.1f}x" if paper else "-"
            by_wall = f"{paper / result.runtime_s:9.1f}x" if paper else "-"
            print(
                f"{name:<10} {algorithm:<11} {n:>8} {result.metrics['accuracy']:>9.4f} {cpu:>8.1f} "
                f"{result.runtime_s:>8.1f} {1e3 * cpu / n:>7.2f} {paper or '-':>8} {by_cpu:>10} {by_wall:>10}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("costs", "runtime"))
    parser.add_argument("--datasets", nargs="+")
    parser.add_argument("--algorithms", nargs="+", default=["best_vfdt", "oza", "adaolm", "onlinembbm"])
    parser.add_argument("--examples", type=int, default=500, help="costs: examples recorded per data set")
    parser.add_argument(
        "--authors-examples",
        type=int,
        default=None,
        help="costs: examples replayed through the (slow) Monte Carlo baselines (default: all)",
    )
    parser.add_argument("--gamma", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--paper-weights", action="store_true", help="runtime: the paper's importance weights")
    args = parser.parse_args()
    if args.what == "costs":
        bench_costs(
            args.datasets or ["balance", "cars", "nursery", "mice", "movement"],
            args.examples,
            args.gamma,
            args.authors_examples,
        )
    else:
        bench_runtime(args.datasets or DATASETS, args.algorithms, args.gamma, args.seed, not args.paper_weights)


if __name__ == "__main__":
    main()
