"""river's BR + kNN and BR + Hoeffding tree against olb's compiled equivalents (br_knn, br_ht), side by side.

    python benchmarks/bench_stream_br.py                                  # emotions and yeast, both learners
    python benchmarks/bench_stream_br.py --datasets bibtex --rows 500     # a prefix of a large stream
    python benchmarks/bench_stream_br.py --learners br_ht

Per (learner, data set): one prequential stream over the rows in file order (the training split, then the test
split; ``--rows`` keeps the first n), river's model at the MLHAT benchmark's settings, then olb's learner, each pass
timed whole in CPU seconds (``olb.learners.stream_br.reference.side_by_side``); the table gives the CPU per example
of each, their ratio, and the rows whose predicted label sets differ (0: river's on every row). olb's kernels are
made ready first (built or loaded, or compiled under ``OLB_KERNELS=jit``), and its learner warmed on a few rows,
so that neither counts in its time.
"""

from __future__ import annotations

import argparse
from typing import Any

from olb.data import load_dataset
from olb.learners.stream_br.reference import REFERENCES, side_by_side
from olb.learners.registry import get_algorithm

WARM_UP: dict[str, dict[str, Any]] = {
    "br_knn": {},
    "br_ht": {"grace_period": 5, "split_confidence": 0.5, "tie_threshold": 1.0},
}
"""Settings of the warm-up run (the tree's split quickly, so that every kernel runs before the clock starts)."""


def measure(learner: str, dataset: str, rows: int | None) -> dict:
    data = load_dataset(dataset)
    n = data.n_examples if rows is None else min(rows, data.n_examples)
    cls = get_algorithm(learner)
    warm = cls(data.n_features, data.Y.shape[1], **WARM_UP[learner])
    for i in range(min(50, n)):
        x = data.X[i] if not data.is_sparse else data.X[[i]]
        warm.predict_one(x)
        warm.learn_one(x, data.Y[i])
    found = side_by_side(REFERENCES[learner](), cls(data.n_features, data.Y.shape[1]), data.X, data.Y, range(n))
    return {
        "learner": learner,
        "dataset": dataset,
        "rows": n,
        "river_us": 1e6 * found.river_cpu_s / n,
        "olb_us": 1e6 * found.olb_cpu_s / n,
        "ratio": found.river_cpu_s / found.olb_cpu_s,
        "differ": len(found.differ),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", nargs="+", default=list(REFERENCES), choices=list(REFERENCES))
    parser.add_argument("--datasets", nargs="+", default=["emotions", "yeast"])
    parser.add_argument("--rows", type=int, default=None, help="the first ROWS rows of each stream (default: all)")
    args = parser.parse_args(argv)
    columns = ["learner", "dataset", "rows", "river_us", "olb_us", "ratio", "differ"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for learner in args.learners:
        for dataset in args.datasets:
            row = measure(learner, dataset, args.rows)
            cells = [
                f"{row[c]:.1f}" if c == "ratio" else f"{row[c]:.0f}" if isinstance(row[c], float) else str(row[c])
                for c in columns
            ]
            print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
