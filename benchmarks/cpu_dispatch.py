"""Whether a cell's results depend on the CPU: the libraries olb calls pick their code by the CPU's instruction
set when they load (docs/speed.md, "Bit-identical results"). This command runs cells in child processes, once as
they are and once per switch below, each switch making one library pick the code it would pick on an x86-64 CPU
without AVX2/FMA/AVX-512, and reports per cell whether the metrics, the learning curve and the final model's
arrays (float, integer and boolean: the trees' structure too) are identical to the run as is::

    python benchmarks/cpu_dispatch.py                          # every cell below, every switch
    python benchmarks/cpu_dispatch.py --cells falt-emotions adaolmr-emotions-100-s0 --switches glibc

Switches (``--switches``):

- ``again``: none, the control (a cell whose second run differs from its first is not deterministic);
- ``glibc``: ``GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA,-AVX512F``: glibc's libm resolves ``log2``, ``log``,
  ``exp``, ... to its variants without FMA (numba's ``math`` functions and scipy's ``ndtr`` call them);
- ``numpy``: ``NPY_DISABLE_CPU_FEATURES`` set to every target numpy dispatches to on this machine beyond its
  baseline (``X86_V3 X86_V4 AVX512_ICL AVX512_SPR`` for numpy 2.4 on an AVX-512 CPU): numpy's ufuncs (``exp``,
  ``log``, ...) and its sorts (``argsort``: x86-simd-sort with AVX2 or AVX-512) run their baseline code;
- ``openblas``: ``OPENBLAS_CORETYPE=Nehalem``: OpenBLAS (numpy's and scipy's matrix products) uses its SSE
  kernels.

``tests/any_cpu.py`` defines the three; ``make test-any-cpu`` runs the bit-exact tests with all of them. Also
counts, per run, the boosters' split decisions among features with exactly tied merits, and how many of them
numpy's ``argsort`` (the forest's rule before it took the lowest index) would have decided differently from the
lowest feature index. Cells are small versions of the papers' (fewer loops), to keep the run to a few CPU-minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "regression")]

from any_cpu import older_cpu_env  # noqa: E402

_TABLE3 = {"num_learners": 100, "num_covariates": 20, "authors_weights": True}


def _table3(algorithm: str, dataset: str, seed: int, **params) -> dict:
    return dict(algorithm=algorithm, dataset=dataset, seed=seed, protocol="train_test", params={**_TABLE3, **params})


def _topk_emotions(algorithm: str, **params) -> dict:
    return dict(
        algorithm=algorithm,
        dataset="emotions",
        seed=0,
        protocol="train_test",
        loops=2,
        params={"num_learners": 50, "k": 3, "rho": 0.02, "exploration": "uniform", **params},
    )


# name -> CellSpec keyword arguments
CELLS = {
    # conf/experiment/table3.yaml (OnlineBMR at one of its four gammas)
    "adaolmr-emotions-100-s0": _table3("adaolmr", "emotions", 0),
    "adaolmr-emotions-100-s1": _table3("adaolmr", "emotions", 1),
    "onlinebmr-emotions-100-s0": _table3("onlinebmr", "emotions", 0, gamma=0.1),
    "onlinebmr-emotions-100-s1": _table3("onlinebmr", "emotions", 1, gamma=0.1),
    "adaolmr-yeast-100-s0": _table3("adaolmr", "yeast", 0),
    "onlinebmr-scene-100-s0": _table3("onlinebmr", "scene", 0, gamma=0.1),
    # binary covariates (many exactly tied merits): leaderboard-like boosters on medical
    "adaolmr-medical-40-s0": dict(
        algorithm="adaolmr", dataset="medical", seed=0, params={"num_learners": 40, "authors_weights": True}
    ),
    "onlinebmr-medical-40-s0": dict(
        algorithm="onlinebmr", dataset="medical", seed=0, params={"num_learners": 40, "gamma": 0.1}
    ),
    # conf/experiment/topk_table1.yaml's emotions cells with 2 loops instead of 20/10
    "topopt-emotions-50-s0": _topk_emotions("topopt", gamma=0.1),
    "topada-emotions-50-s0": _topk_emotions("topada"),
    # the multi-class boosters
    "adaolm-balance-20-s0": dict(algorithm="adaolm", dataset="balance", seed=0, params={"num_learners": 20}),
    "onlinembbm-balance-20-s0": dict(
        algorithm="onlinembbm", dataset="balance", seed=0, params={"num_learners": 20, "gamma": 0.1}
    ),
    # linear, kernel, ELM, nearest-neighbour learners with default hyperparameters
    **{
        f"{algorithm}-{dataset}": dict(algorithm=algorithm, dataset=dataset, seed=0)
        for algorithm in ("falt", "salt", "pa1_br", "pa2_br", "olansgd_star")
        for dataset in ("emotions", "medical")
    },
    **{
        f"{algorithm}-emotions": dict(algorithm=algorithm, dataset="emotions", seed=0)
        for algorithm in ("falt_kernel", "pa1_br_kernel", "osml_elm", "elm_omll_star", "knn", "oml")
    },
}


SWITCHED = {"glibc": "GLIBC_TUNABLES", "numpy": "NPY_DISABLE_CPU_FEATURES", "openblas": "OPENBLAS_CORETYPE"}


def switches() -> dict[str, dict[str, str]]:
    """Switch name -> environment (one variable of ``tests/any_cpu.py``'s); ``again`` (none) is the control."""
    env = older_cpu_env()
    return {"again": {}, **{name: {variable: env[variable]} for name, variable in SWITCHED.items()}}


def count_tied_splits(counts: dict) -> None:
    """Count the forest's splits among exactly tied best merits, and those where numpy's argsort picks another
    feature than the lowest index (wraps ``vfdt_core.evaluate_splits`` for this process)."""
    import numpy as np

    from bench_speed import stepwise_kernels

    from olb.weak.vfdt import vfdt_core  # the kernels the forest calls (olb.kernels)

    stepwise_kernels(vfdt_core)  # the split attempts one call each, hooked below
    evaluate = vfdt_core.evaluate_splits

    def counting(*args):
        out = evaluate(*args)
        splits, feature, _, per_feature = out[:4]
        for b in np.flatnonzero(splits):
            tied = np.flatnonzero(per_feature[b] == per_feature[b].max())
            if len(tied) < 2:
                continue
            lowest = int(tied[0])
            counts["tied"] += 1
            counts["argsort_not_lowest"] += int(np.argsort(per_feature[b])[::-1][0] != lowest)
            counts["core_not_lowest"] += int(feature[b] != lowest)
        return out

    vfdt_core.evaluate_splits = counting


def child(names: list[str], data_dir: str | None) -> None:
    """Run ``names`` in this process; print one JSON line per cell."""
    from cases import model_fingerprint, run_keeping_learner

    for name in names:
        counts = {"tied": 0, "argsort_not_lowest": 0, "core_not_lowest": 0}
        count_tied_splits(counts)
        cpu = time.process_time()
        stream, learner = run_keeping_learner(CELLS[name], data_dir, curve_every=50)
        result = {
            "cell": name,
            "metrics": dict(stream.metrics),
            "curve": [float(v) for v in stream.curve["value"]],
            "model": model_fingerprint(learner, kinds="fiub"),
            "cpu_s": time.process_time() - cpu,
            "ties": counts,
        }
        print(json.dumps(result), flush=True)


def run_children(names: list[str], env_extra: dict[str, str], data_dir: str | None) -> dict[str, dict]:
    env = {**os.environ, **env_extra, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, __file__, "--child", *names]
    if data_dir:
        command += ["--data-dir", data_dir]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode:
        raise SystemExit(f"cpu_dispatch: the child with {env_extra or 'no switch'} failed:\n{done.stderr[-3000:]}")
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {r["cell"]: r for r in results}


def differs(a: dict, b: dict) -> str:
    """'same', or which of metrics / curve / model differ (with the largest metric difference)."""
    parts = []
    if a["metrics"] != b["metrics"]:
        gap = max(abs(a["metrics"][m] - b["metrics"][m]) for m in a["metrics"])
        parts.append(f"metrics (max |diff| {gap:.2g})")
    if a["curve"] != b["curve"]:
        parts.append("curve")
    if a["model"] != b["model"]:
        parts.append("model")
    return ", ".join(parts) or "same"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", nargs="+", choices=sorted(CELLS), default=list(CELLS), metavar="CELL")
    parser.add_argument("--switches", nargs="+", choices=["again", *SWITCHED])
    parser.add_argument("--data-dir", default=None, help="the data directory (default: OLB_DATA_DIR)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.data_dir)
    chosen = {k: v for k, v in switches().items() if not args.switches or k in args.switches}
    for name, env in chosen.items():
        print(f"# {name}: {' '.join(f'{k}={v!r}' for k, v in env.items())}", flush=True)
    base = run_children(args.cells, {}, args.data_dir)
    runs = {name: run_children(args.cells, env, args.data_dir) for name, env in chosen.items()}
    print()
    print("| cell | CPU s (as is) | " + " | ".join(chosen) + " | tied splits (argsort != lowest) |")
    print("|---|---|" + "---|" * len(chosen) + "---|")
    for cell in args.cells:
        row = [differs(base[cell], runs[name][cell]) for name in chosen]
        ties = base[cell]["ties"]
        tie_text = f"{ties['tied']} ({ties['argsort_not_lowest']})" if ties["tied"] else "0"
        for name in chosen:
            other = runs[name][cell]["ties"]
            if other != ties:
                tie_text += f"; {name}: {other['tied']} ({other['argsort_not_lowest']})"
        print(f"| {cell} | {base[cell]['cpu_s']:.1f} | " + " | ".join(row) + f" | {tie_text} |", flush=True)


if __name__ == "__main__":
    main()
