"""Speed of the boosters toward the hardware's limit: CPU seconds of the stream and microseconds per example
per tree (see docs/speed.md). The authors' code is not timed here: a ratio against it needs both run side by side
on one machine.

    python benchmarks/bench_speed.py                 # every cell, median of 3, each cell in a fresh process
    python benchmarks/bench_speed.py --repeats 1 --cells adaolmr-emotions-authors
    python benchmarks/bench_speed.py --jit         # numba's import, and the first examples with a cold/warm cache
    python benchmarks/bench_speed.py --profile --cells adaolmr-yeast-authors   # where a cell's time goes
    python benchmarks/bench_speed.py --profile --cells onlinebmr-bibtex-40     # ... a paired cell's (train_frozen)
    python benchmarks/bench_speed.py --against f1baebd            # CPU and peak-memory ratios against a commit
    python benchmarks/bench_speed.py --against f1baebd --quick    # its light cells only (passes, CV stage)
    python benchmarks/bench_speed.py --against f1baebd --paired-cells falt-pass-bibtex pa1-br-pass-bibtex
    python benchmarks/bench_speed.py --against f1baebd --this num_covariates=10 --paired-cells adaolmr-bibtex-40

Each cell runs in its own child process (so its peak RSS is its own); inside it, the cell runs once untimed
(imports and compiled-code warm-up) and then ``--repeats`` times; the stream's CPU seconds (the protocol's
``cpu_s``: learning and scoring, no data loading) are reported as the median.

``--against REV`` compares this checkout with commit REV on the heaviest cells (``PAIRED_CELLS``): REV is
extracted (``git archive``) into a scratch directory and run with ``PYTHONPATH`` pointing at it; each checkout
has its own numba cache (warmed first, untimed). Every repeat runs each cell once per checkout, one right after
the other (which goes first alternates), each in a fresh process; the ratios REV / this checkout of CPU seconds
and of peak memory (the whole process's, as ``olb.run`` reports it) are taken pair by pair, and their medians
reported. Light cells (passes, the CV stage) run twice per process and report the second run (the first loads
the compiled code). ``train`` cells (the row-loop learners that are not compiled) time the training phase, predict
only the first ``TRAIN_TEST_ROWS`` test rows and add the final model's fingerprint to what "same" compares. ``--this KEY=VALUE ...`` adds hyperparameters to this checkout's cells only (a setting or an
option REV does not have; the "same" column then compares results across it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import statistics
import subprocess
import sys
import time

# name -> (algorithm, dataset, hyperparameters); "-authors": the papers' tables' setting (authors_weights=True)
CELLS = {
    "adaolmr-emotions-paper": ("adaolmr", "emotions", {}),
    "adaolmr-emotions-authors": ("adaolmr", "emotions", {"authors_weights": True}),
    "onlinebmr-emotions-authors": ("onlinebmr", "emotions", {"authors_weights": True, "gamma": 0.1}),
    "adaolmr-yeast-authors": ("adaolmr", "yeast", {"authors_weights": True}),
    "onlinebmr-yeast-authors": ("onlinebmr", "yeast", {"authors_weights": True, "gamma": 0.1}),
    "adaolm-balance-authors": ("adaolm", "balance", {"authors_weights": True}),
    "onlinembbm-balance-authors": ("onlinembbm", "balance", {"authors_weights": True, "gamma": 0.1}),
}


# Paired cells (--against): name -> (what runs, algorithm, dataset, hyperparameters, light). The boosters at 40
# trees with the board's settings (conf/experiment/leaderboard.yaml, gamma 0.1); the passes: the training phase
# of one train_frozen cell (one pass over the training split, no predictions); the CV stage: one setting's
# 10-fold cross-validation on the training split (olb.grid.selection.cv_scores).
_BOARD = {"num_learners": 40, "num_covariates": 20, "authors_weights": True, "threshold_rule": "alt_scores"}
PAIRED_CELLS = {
    "onlinebmr-corel5k-40": ("stream", "onlinebmr+threshold", "corel5k", {**_BOARD, "gamma": 0.1}, False),
    "adaolmr-corel5k-40": ("stream", "adaolmr+threshold", "corel5k", _BOARD, False),
    "onlinebmr-bibtex-40": ("stream", "onlinebmr+threshold", "bibtex", {**_BOARD, "gamma": 0.1}, False),
    "adaolmr-bibtex-40": ("stream", "adaolmr+threshold", "bibtex", _BOARD, False),
    "falt-pass-bibtex": ("pass", "falt", "bibtex", {}, True),
    "salt-pass-bibtex": ("pass", "salt", "bibtex", {}, True),
    "pa1-br-pass-bibtex": ("pass", "pa1_br", "bibtex", {}, True),
    "falt-cv10-bibtex": ("cv", "falt", "bibtex", {}, True),
    # the learners whose passes lost the protocol's work per row: the training phase, then only the first
    # TRAIN_TEST_ROWS test rows (their predictions scan every support vector or stored row); "same" compares the
    # final models' fingerprints too. The kernel learners and OML on bibtex take 10-50 s a pass: run once a process
    "falt-kernel-train-bibtex": ("train", "falt_kernel", "bibtex", {}, False),
    "pa1-br-kernel-train-bibtex": ("train", "pa1_br_kernel", "bibtex", {}, False),
    "osml-elm-train-bibtex": ("train", "osml_elm", "bibtex", {}, True),
    "elm-omll-train-bibtex": ("train", "elm_omll_star", "bibtex", {}, True),
    "knn-train-bibtex": ("train", "knn", "bibtex", {}, True),
    "oml-train-bibtex": ("train", "oml", "bibtex", {}, False),
    "falt-kernel-train-scene": ("train", "falt_kernel", "scene", {}, True),
    "oml-train-scene": ("train", "oml", "scene", {}, True),
    "osml-elm-bibtex": ("stream", "osml_elm", "bibtex", {}, True),  # the whole cell: its predictions too
}
TRAIN_TEST_ROWS = 100


def paired_child(name: str, seed: int, extra: dict) -> dict:
    """One paired cell in this process (whichever olb PYTHONPATH gives), with the hyperparameters ``extra`` added:
    CPU seconds, peak memory, metrics."""
    import resource

    kind, algorithm, dataset, params, light = PAIRED_CELLS[name]
    params = {**params, **extra}
    for _ in range(2 if light else 1):
        if kind == "cv":
            from olb.data import load_dataset
            from olb.grid.selection import cv_scores

            data = load_dataset(dataset)
            r = cv_scores(algorithm, params, data, ("rank_loss", "hamming_loss"), 10, seed)
            out = {"cpu_s": r.cpu_s, "metrics": r.folds[0]}
            out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        else:
            from olb.run import CellSpec, run_cell

            with _train_cell() if kind == "train" else contextlib.nullcontext([]) as learners:
                spec = CellSpec(algorithm, dataset, seed=seed, params=params, protocol="train_frozen")
                stream = run_cell(spec).stream
            cpu = stream.phases["train"]["cpu_s"] if kind in ("pass", "train") else stream.cpu_s
            out = {"cpu_s": cpu, "metrics": dict(stream.metrics), "peak_rss_mb": stream.peak_rss_mb}
            if learners:
                out["metrics"]["model_fingerprint"] = _fingerprint(learners[0])
    return out


@contextlib.contextmanager
def _train_cell():
    """Within it, a cell's test phase keeps its first ``TRAIN_TEST_ROWS`` rows; yields the list its learner is
    appended to (whichever olb is on the path: only ``make_phases`` and ``run_stream`` are patched)."""
    import dataclasses

    import olb.protocol

    make_phases, run_stream, learners = olb.protocol.make_phases, olb.protocol.run_stream, []

    def few_test_rows(*args, **kwargs):
        phases = make_phases(*args, **kwargs)
        return [*phases[:-1], dataclasses.replace(phases[-1], rows=phases[-1].rows[:TRAIN_TEST_ROWS])]

    def keeping_learner(learner, *args, **kwargs):
        learners.append(learner)
        return run_stream(learner, *args, **kwargs)

    olb.protocol.make_phases, olb.protocol.run_stream = few_test_rows, keeping_learner
    try:
        yield learners
    finally:
        olb.protocol.make_phases, olb.protocol.run_stream = make_phases, run_stream


def _fingerprint(learner) -> str:
    """The model fingerprint of ``tests/regression`` (this checkout's), so that "same" compares the models."""
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "regression"))
    from cases import model_fingerprint

    return model_fingerprint(learner)


def extract(rev: str, directory: str) -> str:
    """The tree of commit ``rev`` of this repository, extracted into ``directory``; returns its path."""
    import io
    import tarfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    archive = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", rev], capture_output=True, check=True)
    target = Path(directory) / "rev"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(target, filter="data")
    return str(target)


def against(rev: str, names: list[str], repeats: int, seed: int, this_params: dict) -> None:
    """Paired CPU and peak-memory ratios of REV against this checkout (see the module docstring)."""
    import os
    import tempfile
    from pathlib import Path

    here = str(Path(__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory(prefix="olb-bench-") as scratch:
        trees = {rev: extract(rev, scratch), "this": here}
        envs = {
            label: {**os.environ, "PYTHONPATH": tree, "NUMBA_CACHE_DIR": os.path.join(scratch, f"numba-{i}")}
            for i, (label, tree) in enumerate(trees.items())
        }

        def run(label: str, name: str, warm_up: bool = False) -> dict:
            cmd = [sys.executable, __file__, "--paired-child", name, "--seed", str(seed)]
            if label == "this" and this_params and not warm_up:
                cmd += ["--child-params", json.dumps(this_params)]
            out = subprocess.run(cmd, capture_output=True, text=True, env=envs[label], cwd=scratch)
            if out.returncode:
                raise SystemExit(f"bench_speed: {name} failed under {label}:\n{out.stderr[-2000:]}")
            return json.loads(out.stdout.strip().splitlines()[-1])

        for label in trees:  # compile into each checkout's numba cache, untimed
            run(label, "falt-pass-bibtex", warm_up=True)
            if any(not PAIRED_CELLS[n][4] for n in names):
                subprocess.run(
                    [sys.executable, "-m", "olb.run", "algorithm=onlinebmr", "dataset=emotions", "num_learners=2"],
                    capture_output=True,
                    env=envs[label],
                    cwd=scratch,
                    check=True,
                )
        results = {name: {label: [] for label in trees} for name in names}
        for r in range(repeats):
            for name in names:
                for label in (rev, "this") if r % 2 == 0 else ("this", rev):
                    results[name][label].append(run(label, name))
                    print(f"  {name} {label}: {results[name][label][-1]}", file=sys.stderr, flush=True)
    print(f"{rev} / this checkout, paired, medians of {repeats} (min-max of the paired ratios)")
    header = f"{'cell':<22} {'CPU s ' + rev:>14} {'CPU s this':>11} {'CPU ratio':>17} {'peak MB':>15} {'mem ratio':>17}  same"
    print(header)
    print("-" * len(header))
    for name in names:
        old, new = results[name][rev], results[name]["this"]
        cpu = [o["cpu_s"] / n["cpu_s"] for o, n in zip(old, new)]
        mem = [o["peak_rss_mb"] / n["peak_rss_mb"] for o, n in zip(old, new)]
        same = all(o["metrics"] == n["metrics"] for o, n in zip(old, new))
        med = statistics.median
        print(
            f"{name:<22} {med(o['cpu_s'] for o in old):>14.3f} {med(n['cpu_s'] for n in new):>11.3f} "
            f"{med(cpu):>6.2f}x ({min(cpu):.2f}-{max(cpu):.2f}) "
            f"{med(o['peak_rss_mb'] for o in old):>6.0f}/{med(n['peak_rss_mb'] for n in new):<6.0f} "
            f"{med(mem):>6.2f}x ({min(mem):.2f}-{max(mem):.2f})  {'yes' if same else 'NO'}",
            flush=True,
        )


def measure(algorithm: str, dataset: str, params: dict, repeats: int, seed: int) -> dict:
    """Run one cell ``repeats`` times after an untimed warm-up run; CPU seconds of each stream and the peak RSS."""
    import resource

    from olb.run import CellSpec, run_cell

    spec = CellSpec(algorithm, dataset, seed=seed, params=params)
    start = time.process_time()
    run_cell(spec)
    first_cpu_s = time.process_time() - start
    cpu, metrics = [], None
    for _ in range(repeats):
        result = run_cell(spec)
        cpu.append(result.stream.cpu_s)
        metrics = dict(result.metrics)
    n = sum(p["n_examples"] for p in result.stream.phases.values())
    return {
        "cpu_s": cpu,
        "n_examples": n,
        "first_run_cpu_s": first_cpu_s,
        "metrics": metrics,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def first_examples(n: int = 200) -> dict:
    """Wall seconds of ``import numba``, of importing and building a forest, and of its first ``n`` examples
    (where the compiled code is loaded from numba's cache, or compiled if the cache is cold)."""

    start = time.perf_counter()
    import numba  # noqa: F401

    imported = time.perf_counter()
    import numpy as np

    from olb.weak.vfdt import VFDTForest

    forest = VFDTForest(3, 8, 3, num_covariates=4, seed=0)
    rng = np.random.default_rng(0)
    built = time.perf_counter()
    for _ in range(n):
        x = rng.normal(size=8)
        weights = np.zeros((3, 3))
        weights[:, int(x[0] > 0) + int(x[1] > 0)] = 1.0
        forest.predict_proba(x)
        forest.learn(x, weights)
    return {
        "import_numba_s": imported - start,
        "build_s": built - imported,
        "first_examples_s": time.perf_counter() - built,
    }


def jit_report() -> None:
    """The compiled code's start-up: a fresh process with an empty numba cache, then one reusing that cache."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for label in ("cold cache (compiles)", "warm cache (loads)"):
            out = subprocess.run(
                [sys.executable, __file__, "--jit-child"], capture_output=True, text=True, check=True, env=env
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"{label:<22} import numba {r['import_numba_s']:.2f} s, import + build forest {r['build_s']:.2f} s,"
                f" first 200 examples {r['first_examples_s']:.2f} s (wall)",
                flush=True,
            )


def profile(algorithm: str, dataset: str, params: dict, seed: int, protocol: str | None = None) -> None:
    """Where one cell's stream time goes: wall seconds inside each compiled kernel of the forest (one run after
    a warm-up); how many leaves the split attempts' screen settled; how many normal-CDF values the attempts need
    (the screen computes each, the exact score again for the leaves it scores) and how many glibc log2 values the
    exact scores computed, with what one costs (scipy's ndtr and glibc's log2, called from compiled code as the
    forest calls them)."""
    from collections import Counter

    from olb.run import CellSpec, run_cell
    from olb.weak import vfdt_core as jit_core
    from olb.weak.vfdt import vfdt_core  # the kernels the forest calls (olb.kernels)

    spec = CellSpec(algorithm, dataset, seed=seed, params=params, **({"protocol": protocol} if protocol else {}))
    run_cell(spec)
    seconds, counts = Counter(), Counter()
    kernels = ("route", "leaf_masses", "update_statistics", "evaluate_splits", "branch_masses", "apply_splits")
    originals = {name: getattr(vfdt_core, name) for name in kernels}
    fused = {name: getattr(vfdt_core, name) for name in ("predict_row", "learn_row")}

    def cdf_and_log_values(args, result):
        """How many normal-CDF values the call computed (a class with weight whose range holds the threshold) and
        at most how many log2 values (a class with mass on a side: every branch entropy term; a candidate whose
        branch is too light computes none, which this count does not know)."""
        forest, leaves = args[:2]
        slot, pair_of, g_weight, g_min, g_max = forest.slot, forest.pair_of, forest.g_weight, forest.g_min, forest.g_max
        usable, thresholds = result[2], result[-1]
        cdf = logs = 0
        for b, leaf in enumerate(leaves):
            rows = pair_of[slot[leaf]]
            rows = rows[rows >= 0]  # the leaf's labels with estimators: (labels, d) below
            t = thresholds[b][:, :, None]  # (d, T, 1)
            w, lo, hi = (a[rows].T[:, None, :] for a in (g_weight, g_min, g_max))
            has = (w > 0) & usable[b][:, None, None]
            left, right = has & ~(t < lo), has & ~(t > hi)
            cdf += int((left & right).sum())
            logs += int(left.sum() + right.sum())
        return cdf, logs

    counting = False

    def timed(name):
        def call(*args):
            start = time.perf_counter()
            result = originals[name](*args)
            if not counting:
                seconds[name] += time.perf_counter() - start
                counts[name] += 1
            elif name == "evaluate_splits":
                counts["cdf"] += cdf_and_log_values(args, originals[name](*args[:-1], False))[0]  # every candidate
                counts["log2"] += cdf_and_log_values(args, result)[1]  # the exactly scored leaves' only
                counts["leaves"] += len(args[1])
                counts["scored"] += int(result[2].any(axis=1).sum())
            return result

        return call

    for name in kernels:  # the forest's steps, one kernel call each (stepwise_kernels), hooked here
        setattr(vfdt_core, name, timed(name))
    stepwise_kernels(vfdt_core)
    try:
        result = run_cell(spec)  # timed
        counting = True
        run_cell(spec)  # the same stream again, counting the CDF values (outside the timed run)
    finally:
        for name, fn in {**originals, **fused}.items():
            setattr(vfdt_core, name, fn)

    ns_per_cdf, ns_per_log2 = ns_per_value(jit_core.ndtr), ns_per_value(math.log2)
    print(f"{algorithm} {dataset} {params}: stream {result.stream.cpu_s:.2f} CPU s")
    for name in kernels:
        print(f"  {name:<18} {seconds[name]:7.2f} s in {counts[name]:>7} calls")
    cdf_s, log_s = counts["cdf"] * ns_per_cdf * 1e-9, counts["log2"] * ns_per_log2 * 1e-9
    print(
        f"  split attempts on {counts['leaves']:,} leaves, {counts['scored']:,} of them scored exactly (the screen "
        f"settled the others); {counts['cdf']:,} normal-CDF values ({ns_per_cdf:.1f} ns each: {cdf_s:.2f} s) and, "
        f"in the exact scores, at most {counts['log2']:,} log2 values ({ns_per_log2:.1f} ns each: {log_s:.2f} s); "
        f"together {cdf_s + log_s:.2f} s of the {seconds['evaluate_splits']:.2f} s in evaluate_splits"
    )


def stepwise_kernels(core) -> None:
    """Make the VFDT forest call its steps' kernels one by one from Python, so that a diagnostic can hook each
    (``core``: the kernels the forest calls, ``olb.weak.vfdt.vfdt_core``): its fused kernels ``predict_row`` and
    ``learn_row`` replaced by their steps in their order (the same results, more calls)."""

    def predict_row(forest, x, normalize):
        leaves = core.route(forest, x)
        return leaves, core.leaf_masses(forest, leaves, normalize)

    def learn_row(forest, x, weights, leaves, n_nodes, n_slots):
        due, trees = core.update_statistics(forest, x, weights, leaves)
        if len(due):
            splits, feature, _, _, best_t, thresholds = core.evaluate_splits(forest, due, trees, True)
            if splits.any():
                left, right = core.branch_masses(forest, splits, due, feature, best_t, thresholds)
                args = (splits, feature, best_t, due, thresholds, left, right, n_nodes, n_slots)
                return core.apply_splits(forest, *args)
        return n_nodes, n_slots

    core.predict_row, core.learn_row = predict_row, learn_row


def ns_per_value(function) -> float:
    """Nanoseconds per call of a compiled scalar ``function`` (float -> float) in a compiled loop, as the forest
    calls it: median of 3 runs over 2 million arguments (normal, scale 1.5, absolute values plus 1e-3 for log2)."""
    import numpy as np
    from numba import njit

    @njit
    def loop(z, out):
        for i in range(z.shape[0]):
            out[i] = function(z[i])

    z = np.abs(np.random.default_rng(0).normal(scale=1.5, size=2_000_000)) + 1e-3
    out = np.empty_like(z)
    loop(z, out)
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        loop(z, out)
        runs.append((time.perf_counter() - start) / z.size * 1e9)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    streams = [name for name, cell in PAIRED_CELLS.items() if cell[0] == "stream"]
    parser.add_argument(
        "--cells",
        nargs="+",
        default=list(CELLS),
        choices=list(CELLS) + streams,
        help=f"{', '.join(streams)}: --profile",
    )
    parser.add_argument("--num-learners", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jit", action="store_true", help="only the compiled code's start-up, cold and warm")
    parser.add_argument("--profile", action="store_true", help="where each cell's time goes (kernels, CDF count)")
    parser.add_argument("--against", metavar="REV", help="paired CPU and peak-memory ratios against commit REV")
    parser.add_argument("--paired-cells", nargs="+", choices=list(PAIRED_CELLS), default=list(PAIRED_CELLS))
    parser.add_argument("--quick", action="store_true", help="with --against: only the light cells (passes, CV)")
    parser.add_argument(
        "--this",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="with --against: hyperparameters for this checkout's cells only (e.g. num_covariates=10)",
    )
    parser.add_argument("--paired-child", help=argparse.SUPPRESS)
    parser.add_argument("--child-params", default="{}", help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--jit-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.paired_child:
        print(json.dumps(paired_child(args.paired_child, args.seed, json.loads(args.child_params))))
        return
    if args.against:
        names = [n for n in args.paired_cells if PAIRED_CELLS[n][4] or not args.quick]
        bad = [item for item in args.this if "=" not in item]
        if bad:
            parser.error(f"--this takes KEY=VALUE pairs; not one: {' '.join(bad)}")
        this_params = dict(item.split("=", 1) for item in args.this)
        against(args.against, names, args.repeats, args.seed, this_params)
        return
    if args.jit_child:
        print(json.dumps(first_examples()))
        return
    if args.jit:
        jit_report()
        return
    if args.profile:
        for name in args.cells:
            if name in CELLS:
                algorithm, dataset, params = CELLS[name]
                profile(algorithm, dataset, {**params, "num_learners": args.num_learners}, args.seed)
            else:
                _, algorithm, dataset, params, _ = PAIRED_CELLS[name]
                profile(algorithm, dataset, params, args.seed, protocol="train_frozen")
        return
    if set(args.cells) - set(CELLS):
        parser.error(f"{', '.join(sorted(set(args.cells) - set(CELLS)))}: only with --profile or --against")
    if args.child:  # one cell, in this (fresh) process
        algorithm, dataset, params = CELLS[args.child]
        params = {**params, "num_learners": args.num_learners}
        print(json.dumps(measure(algorithm, dataset, params, args.repeats, args.seed)))
        return
    header = f"{'cell':<28} {'examples':>8} {'cpu_s':>7} {'us/ex/tree':>10} {'1st run s':>9} {'peak MB':>7}  metric"
    print(f"median of {args.repeats} stream CPU times, {args.num_learners} trees, seed {args.seed}")
    print(header)
    print("-" * len(header))
    for name in args.cells:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                name,
                "--repeats",
                str(args.repeats),
                "--num-learners",
                str(args.num_learners),
                "--seed",
                str(args.seed),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        cpu_s = statistics.median(r["cpu_s"])
        us = 1e6 * cpu_s / r["n_examples"] / args.num_learners
        metric = ", ".join(f"{k}={v:.4f}" for k, v in r["metrics"].items())
        print(
            f"{name:<28} {r['n_examples']:>8} {cpu_s:>7.2f} {us:>10.1f} "
            f"{r['first_run_cpu_s']:>9.2f} {r['peak_rss_mb']:>7.0f}  {metric}",
            flush=True,
        )


if __name__ == "__main__":
    main()
