"""Training time of one pass of paper 002's learners, beside the paper's Table 3 (training seconds per pass).

    python benchmarks/bench_alt.py                                 # bibtex (sparse rows): FALT(l), SALT, PA-BR(l)
    python benchmarks/bench_alt.py --datasets emotions yeast scene birds --repeats 10

Times only the learner: the training rows of the split, in a seeded random order, are prepared first (CSR rows
for bibtex, min-max scaled dense rows for the kernel learners and the ELMs, as the protocol gives them) and
the CPU seconds of the ``learn_one`` calls (and ``learn_many`` for the ELMs' initial block) are printed. The
compiled loops are warmed up on a throw-away learner first, so compilation is not counted.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp

from olb.data import load_dataset
from olb.learners.elm import ELMOMLLStar, OSMLELM
from olb.learners.linear import FALT, PA1BR, PA1BRKernel, PA2BR, PA2BRKernel, SALT, FALTKernel

# Paper 002, Table 3: training seconds of one pass (their machine).
PAPER_TRAIN_S = {
    "bibtex": {"osml_elm": 94.43, "elm_omll_star": 100.42, "pa1_br": 0.09, "pa2_br": 0.10, "falt": 0.32, "salt": 0.71},
    "birds": {
        "osml_elm": 2.84,
        "elm_omll_star": 1.73,
        "pa1_br_kernel": 0.01,
        "pa2_br_kernel": 0.01,
        "falt_kernel": 0.05,
    },
    "scene": {
        "osml_elm": 13.14,
        "elm_omll_star": 2.24,
        "pa1_br_kernel": 0.02,
        "pa2_br_kernel": 0.02,
        "falt_kernel": 0.03,
    },
    "emotions": {
        "osml_elm": 0.67,
        "elm_omll_star": 0.96,
        "pa1_br_kernel": 0.01,
        "pa2_br_kernel": 0.01,
        "falt_kernel": 0.01,
    },
    "yeast": {
        "osml_elm": 0.60,
        "elm_omll_star": 15.18,
        "pa1_br_kernel": 0.03,
        "pa2_br_kernel": 0.03,
        "falt_kernel": 0.07,
    },
}
SPARSE = {"bibtex"}


def training_rows(name: str, seed: int):
    """(CSR rows or None, dense X, Y) of the training split in a seeded order: CSR rows for sparse text (the
    learners that accept them get those), min-max scaled dense rows for the dense data sets."""
    data = load_dataset(name)
    order = np.random.default_rng(seed).permutation(data.n_train)
    X, Y = data.X[: data.n_train][order], data.Y[: data.n_train][order]
    if name in SPARSE:
        Xs = sp.csr_array(X)
        return [Xs[i : i + 1] for i in range(Xs.shape[0])], Xs.toarray(), Y
    X = np.asarray(X, dtype=float)
    low, span = X.min(axis=0), np.ptp(X, axis=0)
    return None, (X - low) / np.where(span > 0, span, 1.0), Y


def learners(name: str, repeats: list[int], num_hidden: int):
    """(label, class, hyperparameters) of what runs on ``name``, as the paper assigns methods to data sets."""
    if name in SPARSE:
        runs = [(f"{cls.name} repeats={r}", cls, {"eta": 0.5, "repeats": r}) for r in repeats for cls in (FALT, SALT)]
        runs += [(cls.name, cls, {"C": 1.0}) for cls in (PA1BR, PA2BR)]
    else:
        runs = [(f"falt_kernel repeats={r}", FALTKernel, {"eta": 0.5, "repeats": r, "sigma": 0.5}) for r in repeats]
        runs += [(cls.name, cls, {"C": 1.0, "sigma": 0.5}) for cls in (PA1BRKernel, PA2BRKernel)]
    runs += [(f"{cls.name} L={num_hidden}", cls, {"num_hidden": num_hidden}) for cls in (OSMLELM, ELMOMLLStar)]
    return runs


def one_pass_cpu_s(cls, hyper, csr_rows, X, Y, seed) -> float:
    learner = cls(X.shape[1], Y.shape[1], seed=seed, **hyper)
    rows = csr_rows if csr_rows is not None and cls.accepts_sparse else X
    n_init = round(learner.hyper.get("init_fraction", 0.0) * len(Y))
    start = time.process_time()
    if n_init:
        learner.learn_many(X[:n_init], Y[:n_init])
    for i in range(n_init, len(Y)):
        learner.learn_one(rows[i], Y[i])
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["bibtex"])
    parser.add_argument("--repeats", nargs="+", type=int, default=[20, 50])
    parser.add_argument("--num-hidden", type=int, default=200)
    parser.add_argument(
        "--seeds", type=int, default=3, help="passes (training orders) per learner; the median is printed"
    )
    parser.add_argument("--skip-elm", action="store_true")
    args = parser.parse_args()
    print(f"{'dataset':<10} {'learner':<28} {'rows':>6} {'cpu_s/pass':>11} {'paper_s':>8}")
    for name in args.datasets:
        orders = [training_rows(name, seed) for seed in range(args.seeds)]
        csr_rows, X, Y = orders[0]
        for label, cls, hyper in learners(name, args.repeats, args.num_hidden):
            if args.skip_elm and cls in (OSMLELM, ELMOMLLStar):
                continue
            warm = cls(X.shape[1], Y.shape[1], **hyper)  # compile (or load the cached) loops
            warm.learn_one(csr_rows[0] if csr_rows is not None and cls.accepts_sparse else X[0], Y[0])
            times = [one_pass_cpu_s(cls, hyper, *orders[seed], seed) for seed in range(args.seeds)]
            paper = PAPER_TRAIN_S.get(name, {}).get(cls.name)
            print(
                f"{name:<10} {label:<28} {len(Y):>6} {np.median(times):>11.3f} "
                f"{'' if paper is None else f'{paper:.2f}':>8}",
                flush=True,
            )


if __name__ == "__main__":
    main()
