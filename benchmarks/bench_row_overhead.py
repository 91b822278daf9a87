"""How much of a row-loop learner's training pass and prediction is Python per-row overhead (the protocol's loop,
row copies, feedback, method calls, small arrays) and how much the vectorized numpy/BLAS work a compiled pass
would still have to call (see docs/speed.md, "What runs compiled").

    python benchmarks/bench_row_overhead.py                       # every learner on bibtex and scene
    python benchmarks/bench_row_overhead.py --learners knn oml --datasets emotions

One ``train_frozen`` cell per (learner, data set), seed 1, the learner's default hyperparameters, after one
untimed cell (imports, compiled code). The heavy calls are timed in place (wall clock, ``perf_counter``): the
kernel learners' kernel row and scores (``SupportVectors.kernel_row``/``scores``: every support vector, numpy's
``exp``), the neighbours' memory scan and vote (``k_nearest``, ``vote``), OML's metric step (``update_metric``:
QR, a 2 x 2 ``eigh``, the rank-2 update of V), the ELMs' hidden layer (``hidden``) and their recursive least-squares
step (its five numpy expressions on h x h and h x q arrays, whose cost does not depend on the row: timed on arrays
of the same shapes and counted once per row). The rest of a phase's wall time is the per-row overhead.
"""

from __future__ import annotations

import argparse
import time
import timeit
from collections import defaultdict

import numpy as np

LEARNERS = ("falt_kernel", "pa1_br_kernel", "pa2_br_kernel", "osml_elm", "elm_omll_star", "knn", "oml")


def _timed(owner, name: str, totals: dict, key: str) -> None:
    """Wrap ``owner.name`` so that its wall time adds to ``totals[key][phase]`` (phase: 'train' in learn_one,
    'test' in predict_one, from ``totals['_phase']``)."""
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            totals[key][totals["_phase"][0]] += time.perf_counter() - start

    setattr(owner, name, wrapper)


def _rls_step_s(h: int, q: int) -> float:
    """Seconds of one ELM recursive least-squares step's numpy work on arrays of its shapes (``_OnlineELM.learn_one``)."""
    rng = np.random.default_rng(0)
    M, beta, hv, t = np.eye(h), rng.random((h, q)), rng.random(h), rng.random(q)

    def step():
        Mh = M @ hv
        np.outer(Mh, Mh) / (1.0 + hv @ Mh)
        np.outer(M @ hv, t - hv @ beta)

    # the two in-place updates (M -= ..., beta += ...) cost an add over h x h and h x q
    A, B = np.empty((h, h)), np.empty((h, q))

    def update():
        np.subtract(M, A, out=A)
        np.add(beta, B, out=B)

    n = 200
    return (min(timeit.repeat(step, number=n, repeat=3)) + min(timeit.repeat(update, number=n, repeat=3))) / n


def measure(algorithm: str, dataset: str) -> dict:
    import olb.learners.elm as elm
    import olb.learners.linear.support_vectors as sv
    import olb.learners.neighbors.knn as knn
    import olb.learners.neighbors.oml as oml
    from olb.learners.registry import get_algorithm
    from olb.run import CellSpec, run_cell

    totals: dict = defaultdict(lambda: defaultdict(float))
    totals["_phase"] = ["train"]
    cls = get_algorithm(algorithm)
    hooks = {
        "kernel row + scores": [(sv.SupportVectors, "kernel_row"), (sv.SupportVectors, "scores")],
        "memory scan + vote": [(knn, "k_nearest"), (knn, "vote"), (oml, "k_nearest"), (oml, "vote")],
        "metric step": [(oml.OML, "update_metric")],
        "hidden layer": [(elm._OnlineELM, "hidden")],
    }
    saved = [(owner, name, getattr(owner, name)) for pairs in hooks.values() for owner, name in pairs]
    saved += [(cls, name, getattr(cls, name)) for name in ("learn_one", "predict_one")]
    try:
        for key, pairs in hooks.items():
            for owner, name in pairs:
                _timed(owner, name, totals, key)
        for phase, name in (("train", "learn_one"), ("test", "predict_one")):
            inner = getattr(cls, name)

            def in_phase(self, *args, _inner=inner, _phase=phase):
                totals["_phase"][0] = _phase
                return _inner(self, *args)

            setattr(cls, name, in_phase)
        stream = run_cell(CellSpec(algorithm, dataset, seed=1, protocol="train_frozen")).stream
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)
    out = {}
    for phase in ("train", "test"):
        wall = stream.phases[phase]["wall_s"]
        n = stream.phases[phase]["n_examples"]
        work = {key: totals[key][phase] for key in hooks if totals[key][phase] > 0}
        if issubclass(cls, elm._OnlineELM) and phase == "train":
            h = stream_params(algorithm, dataset)["num_hidden"]
            work["RLS step (timed apart)"] = n * _rls_step_s(h, _n_labels(dataset))
        overhead = wall - sum(work.values())
        out[phase] = {"wall_s": wall, "n": n, "work": work, "overhead_s": overhead, "overhead_share": overhead / wall}
    return out


def stream_params(algorithm: str, dataset: str) -> dict:
    from olb.run import CellSpec

    return CellSpec(algorithm, dataset).resolved_params()


def _n_labels(dataset: str) -> int:
    from olb.data import load_dataset

    return load_dataset(dataset).n_labels


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", nargs="+", default=list(LEARNERS), choices=LEARNERS)
    parser.add_argument("--datasets", nargs="+", default=["bibtex", "scene"])
    args = parser.parse_args(argv)
    measure(args.learners[0], "emotions")  # untimed: imports, data loading code, compiled code
    print("| learner | data set | phase | rows | wall s | vectorized work s (what) | overhead s | overhead share |")
    print("|---|---|---|---|---|---|---|---|")
    for dataset in args.datasets:
        for algorithm in args.learners:
            result = measure(algorithm, dataset)
            for phase in ("train", "test"):
                r = result[phase]
                what = "; ".join(f"{k} {v:.3f}" for k, v in r["work"].items()) or "-"
                print(
                    f"| {algorithm} | {dataset} | {phase} | {r['n']} | {r['wall_s']:.3f} | {what} | "
                    f"{r['overhead_s']:.3f} | {100 * r['overhead_share']:.0f}% |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
