"""Reduced cells whose exact results were recorded before a change meant to keep them: every booster experiment
(papers 000, 001, 004; recorded before the learners moved and before the compiled core) and every learner of
papers 002/003 that loops over rows (recorded before their compiled passes). ``test_regression.py`` reproduces
them.

Record (only when a change is *meant* to alter results, and say why in the commit)::

    python tests/regression/cases.py --record          # every case
    python tests/regression/cases.py --record-new      # only the cases not in reference.json yet
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.append(str(TESTS))  # any_cpu, also when this file runs as a script

from any_cpu import baseline_library_env  # noqa: E402

REFERENCE = Path(__file__).with_name("reference.json")

# (name, CellSpec keyword arguments): small forests, one seed each, every registered booster and baseline.
CASES = [
    (
        "adaolmr_emotions",
        dict(algorithm="adaolmr", dataset="emotions", seed=1, params={"num_learners": 8, "authors_weights": True}),
    ),
    ("adaolmr_emotions_paper", dict(algorithm="adaolmr", dataset="emotions", seed=2, params={"num_learners": 8})),
    (
        "onlinebmr_emotions",
        dict(
            algorithm="onlinebmr",
            dataset="emotions",
            seed=1,
            params={"num_learners": 8, "gamma": 0.1, "authors_weights": True},
        ),
    ),
    (
        "onlinebmr_yeast",
        dict(algorithm="onlinebmr", dataset="yeast", seed=3, params={"num_learners": 4, "gamma": 0.01, "margin": 0.0}),
    ),
    (
        "topopt_emotions",
        dict(
            algorithm="topopt", dataset="emotions", seed=1, params={"num_learners": 6, "gamma": 0.3, "k": 3, "rho": 0.1}
        ),
    ),
    (
        "topopt_emotions_swap",
        dict(
            algorithm="topopt",
            dataset="emotions",
            seed=4,
            params={"num_learners": 6, "gamma": 0.2, "k": 3, "rho": 0.1, "exploration": "single_swap"},
        ),
    ),
    (
        "topada_emotions",
        dict(algorithm="topada", dataset="emotions", seed=1, params={"num_learners": 6, "k": 2, "rho": 0.1}),
    ),
    ("adaolm_balance", dict(algorithm="adaolm", dataset="balance", seed=1, params={"num_learners": 6})),
    (
        "onlinembbm_balance",
        dict(algorithm="onlinembbm", dataset="balance", seed=1, params={"num_learners": 6, "gamma": 0.1}),
    ),
    ("best_vfdt_cars", dict(algorithm="best_vfdt", dataset="cars", seed=1, params={"num_learners": 4})),
    ("oza_balance", dict(algorithm="oza", dataset="balance", seed=2, params={"num_learners": 5})),
    # the learners of papers 002/003 (loops over rows), dense (emotions) and sparse (medical) rows
    ("falt_emotions", dict(algorithm="falt", dataset="emotions", seed=1, loops=2)),
    ("falt_medical", dict(algorithm="falt", dataset="medical", seed=2)),
    ("salt_emotions", dict(algorithm="salt", dataset="emotions", seed=1, loops=2)),
    ("salt_medical", dict(algorithm="salt", dataset="medical", seed=2)),
    ("pa1_br_medical", dict(algorithm="pa1_br", dataset="medical", seed=1, loops=2)),
    ("pa2_br_emotions", dict(algorithm="pa2_br", dataset="emotions", seed=3)),
    ("falt_kernel_emotions", dict(algorithm="falt_kernel", dataset="emotions", seed=1)),
    ("pa1_br_kernel_emotions", dict(algorithm="pa1_br_kernel", dataset="emotions", seed=1)),
    ("pa2_br_kernel_emotions", dict(algorithm="pa2_br_kernel", dataset="emotions", seed=2)),
    ("olansgd_star_emotions", dict(algorithm="olansgd_star", dataset="emotions", seed=1)),
    ("olansgd_star_medical", dict(algorithm="olansgd_star", dataset="medical", seed=1)),
    ("osml_elm_emotions", dict(algorithm="osml_elm", dataset="emotions", seed=1, params={"num_hidden": 20})),
    ("elm_omll_star_emotions", dict(algorithm="elm_omll_star", dataset="emotions", seed=1, params={"num_hidden": 20})),
    ("knn_emotions", dict(algorithm="knn", dataset="emotions", seed=1, params={"n_neighbors": 3})),
    ("oml_emotions", dict(algorithm="oml", dataset="emotions", seed=1, params={"n_neighbors": 3})),
]


def compute(case: dict, data_dir=None) -> dict:
    """The cell's metrics and its learning curve every 20 examples (the curve pins the predictions along the way);
    for the row-loop learners also a fingerprint of the final model (:func:`model_fingerprint`)."""
    stream, learner = run_keeping_learner(case, data_dir)
    result = {"metrics": dict(stream.metrics), "curve": [float(v) for v in stream.curve["value"]]}
    if case["algorithm"] in MODEL_PINNED:
        result["model"] = model_fingerprint(learner)
    return result


def run_keeping_learner(case: dict, data_dir=None, curve_every: int = 20):
    """Run the cell ``case`` (``CellSpec`` keyword arguments); return its stream result and its final learner."""
    import olb.protocol
    from olb.run import CellSpec, run_cell

    learners = []
    run_stream = olb.protocol.run_stream

    def keeping_learner(learner, *args, **kwargs):
        learners.append(learner)
        return run_stream(learner, *args, **kwargs)

    olb.protocol.run_stream = keeping_learner  # run_cell imports it at call time
    try:
        stream = run_cell(CellSpec(data_dir=data_dir, curve_every=curve_every, **case)).stream
    finally:
        olb.protocol.run_stream = run_stream
    return stream, learners[0]


# Learners whose final model is pinned bit for bit (metrics and curves barely see a model's last bits).
MODEL_PINNED = ("falt", "salt", "pa1_br", "pa2_br", "olansgd_star")
# Learners whose model is numpy's CPU-dispatched exp, BLAS or LAPACK at work (the RBF kernel, the ELMs' hidden
# layer and least squares, OML's projection and metric): their last bits follow the code these libraries load for
# the CPU (numpy's AVX-512 exp, OpenBLAS's kernel, glibc's FMA variants), while their metrics and curves do not.
# Their metrics and curves are pinned in this process; their models in a child process that loads the code every
# x86-64 CPU has (:func:`baseline_models`), so that one recorded fingerprint holds on any CPU.
BASELINE_PINNED = ("falt_kernel", "pa1_br_kernel", "pa2_br_kernel", "osml_elm", "elm_omll_star", "knn", "oml")
BASELINE_CASES = [(name, case) for name, case in CASES if case["algorithm"] in BASELINE_PINNED]


def baseline_models(data_dir=None) -> dict:
    """The BASELINE_PINNED cases' model fingerprints, computed in a child process whose numpy, OpenBLAS and glibc
    run the code an x86-64 CPU without AVX2, FMA or AVX-512 gets (``tests/any_cpu.py``), whatever this process
    runs (numba's code, CPU-independent for these learners, stays this process's): ``{"libraries": what ran them, "models": {case name: fingerprint}}``."""
    pythonpath = os.pathsep.join([str(TESTS.parent), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, **baseline_library_env(), "PYTHONPATH": pythonpath}
    command = [sys.executable, __file__, "--baseline-models", *([str(data_dir)] if data_dir else [])]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def _baseline_models_here(data_dir=None) -> dict:
    """:func:`baseline_models` in this process, refused unless its numpy and OpenBLAS run their baseline code."""
    import platform

    import numpy as np
    import scipy.linalg  # noqa: F401 - loads scipy's OpenBLAS too, as a cell does
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    from threadpoolctl import threadpool_info

    dispatched = [t for t in __cpu_dispatch__ if __cpu_features__.get(t)]
    blas = sorted(
        f"openblas {i['version']} {i['architecture']}" for i in threadpool_info() if i["internal_api"] == "openblas"
    )
    core = baseline_library_env()["OPENBLAS_CORETYPE"]
    if dispatched or not blas or any(not b.endswith(f" {core}") for b in blas):
        raise SystemExit(
            f"not the baseline library code: numpy dispatches to {dispatched}, BLAS: {blas or 'not OpenBLAS'}"
        )
    models = {name: model_fingerprint(run_keeping_learner(case, data_dir)[1]) for name, case in BASELINE_CASES}
    libraries = f"numpy {np.__version__} (baseline code); {'; '.join(blas)}; {' '.join(platform.libc_ver())}"
    return {"libraries": libraries, "models": models}


def model_fingerprint(learner, kinds: str = "f") -> str:
    """sha256 of the learner's arrays of the dtype kinds ``kinds`` (float by default; e.g. ``"fiub"`` adds the
    integer and boolean ones, a tree's structure) among its own attributes and those of the objects it holds, by
    name; an object with an integer ``size`` or a length (a store with spare capacity) contributes that many first
    rows only."""
    import hashlib

    import numpy as np

    digest = hashlib.sha256()

    def visit(obj, prefix, depth):
        used = getattr(obj, "size", len(obj) if hasattr(obj, "__len__") else None)
        for name, value in sorted(vars(obj).items()):
            if isinstance(value, np.ndarray) and value.dtype.kind in kinds:
                value = value[:used] if isinstance(used, int) else value
                digest.update(f"{prefix}{name}{value.shape}".encode())
                digest.update(np.ascontiguousarray(value).tobytes())
            elif depth < 2 and hasattr(value, "__dict__") and not isinstance(value, type):
                visit(value, f"{prefix}{name}.", depth + 1)

    visit(learner, "", 0)
    return digest.hexdigest()[:16]


# Experiments whose cell ids (what resume matches finished MLflow runs by) must never change by accident.
EXPERIMENTS = ("default", "table3", "multiclass_table1", "topk_table1", "topk_table2", "topk_figure1")


def cell_ids(experiment: str) -> list[str]:
    from olb.grid import compose
    from olb.grid.planning.expand import plan_grid

    return sorted(c.cell_id for c in plan_grid(compose([f"+experiment={experiment}"])).unique_cells)


if __name__ == "__main__":
    if "--baseline-models" in sys.argv:
        print(json.dumps(_baseline_models_here(*sys.argv[2:3])))
        raise SystemExit(0)
    if "--record" in sys.argv:
        results = {name: compute(case) for name, case in CASES}
    elif "--record-new" in sys.argv:
        results = json.loads(REFERENCE.read_text())
        results.update({name: compute(case) for name, case in CASES if name not in results})
    else:
        raise SystemExit(__doc__)
    results["baseline_models"] = baseline_models()
    results["cell_ids"] = {name: cell_ids(name) for name in EXPERIMENTS}
    REFERENCE.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print(json.dumps(results, indent=1))
