"""Exact k-nearest search for the neighbour learners (knn, oml): our vectorized numpy search against
scipy's cKDTree and scikit-learn's NearestNeighbors, on the real data sets' training rows as the memory.

    python benchmarks/bench_neighbors.py                       # emotions scene yeast enron medical corel5k
    python benchmarks/bench_neighbors.py --datasets emotions --queries 100

Per data set: the memory (all training rows, dense, min-max scaled), the median microseconds of one
query (k = 10, one row at a time as the protocol asks) for each method with its index built once, and the
index's build time (a tree must be rebuilt, or updated, each time the online memory grows; the numpy search
only appends a row). Each method's neighbours are checked to lie at the same distances as the numpy search's (ties may differ).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def per_query_us(search, queries: np.ndarray) -> tuple[float, list]:
    results, times = [], []
    for q in queries:
        start = time.perf_counter()
        results.append(search(q))
        times.append(time.perf_counter() - start)
    return 1e6 * statistics.median(times), results


def same_distances(memory, queries, ours, theirs) -> bool:
    """Whether both searches found neighbours at the same distances (ties may be broken differently)."""

    def dists(q, idx):
        return np.sort(((memory[np.asarray(idx)] - q) ** 2).sum(axis=1))

    return all(np.allclose(dists(q, a), dists(q, b), rtol=1e-9, atol=1e-9) for q, a, b in zip(queries, ours, theirs))


def measure(name: str, n_queries: int, k: int) -> dict:
    from scipy.spatial import cKDTree
    from sklearn.neighbors import NearestNeighbors

    from olb.data import load_dataset
    from olb.learners.neighbors.memory import k_nearest

    data = load_dataset(name)
    X = data.X.toarray() if hasattr(data.X, "toarray") else np.asarray(data.X, dtype=float)
    X = np.nan_to_num(X)
    n_train = data.n_train or (2 * X.shape[0]) // 3
    lo, hi = X[:n_train].min(axis=0), X[:n_train].max(axis=0)
    X = (X - lo) / np.where(hi > lo, hi - lo, 1.0)
    memory, queries = X[:n_train], X[n_train : n_train + n_queries]
    sq = np.einsum("ij,ij->i", memory, memory)
    row = {"dataset": name, "memory": memory.shape[0], "dims": memory.shape[1]}
    row["numpy_us"], ours = per_query_us(lambda q: k_nearest(memory, sq, q, k), queries)
    start = time.perf_counter()
    tree = cKDTree(memory)
    row["kdtree_build_ms"] = 1e3 * (time.perf_counter() - start)
    row["kdtree_us"], theirs = per_query_us(lambda q: tree.query(q, k)[1], queries)
    row["kdtree_same"] = same_distances(memory, queries, ours, theirs)
    for algorithm in ("brute", "auto"):
        start = time.perf_counter()
        nn = NearestNeighbors(n_neighbors=k, algorithm=algorithm).fit(memory)
        row[f"sklearn_{algorithm}_build_ms"] = 1e3 * (time.perf_counter() - start)
        row[f"sklearn_{algorithm}_us"], theirs = per_query_us(lambda q, nn=nn: nn.kneighbors(q[None, :])[1][0], queries)
        row[f"sklearn_{algorithm}_same"] = same_distances(memory, queries, ours, theirs)
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["emotions", "scene", "yeast", "enron", "medical", "corel5k"])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args(argv)
    columns = [
        "dataset",
        "memory",
        "dims",
        "numpy_us",
        "kdtree_us",
        "kdtree_build_ms",
        "sklearn_brute_us",
        "sklearn_auto_us",
        "sklearn_auto_build_ms",
        "kdtree_same",
        "sklearn_brute_same",
        "sklearn_auto_same",
    ]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for name in args.datasets:
        row = measure(name, args.queries, args.k)
        print(
            "| " + " | ".join(f"{row[c]:.0f}" if isinstance(row[c], float) else str(row[c]) for c in columns) + " |",
            flush=True,
        )


if __name__ == "__main__":
    main()
