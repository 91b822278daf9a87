"""olb against MOA on the same rows in the same order: CPU per example of the test-then-train loop, both warm.

    python benchmarks/bench_moa.py                                  # all rows, the four data sets, median of 3
    python benchmarks/bench_moa.py --rounds 1 --datasets balance --rows vfdt oza-20
    python benchmarks/bench_moa.py --out results/bench_moa/table.csv  # also store the table docs/speed.md shows

The rows (``ROWS``): one Hoeffding tree (olb's ``best_vfdt`` with one tree against MOA's ``trees.HoeffdingTree``),
Oza's boosting at 20 and 100 trees (``oza`` against ``meta.OzaBoost``), and Adaboost.OLM and OnlineMBBM at 20 and
100 trees against the same OzaBoost. Every tree has the same settings on both sides (``TREE``): grace period 12,
split confidence 0.1, tie threshold 0.1, every feature numeric (olb reads nominal features as numeric codes), 10
candidate thresholds per feature from a Gaussian estimator per class, majority-class leaves (MOA's ``-l MC``).

Each data set streams once in the order ``np.random.default_rng(seed).permutation`` gives (the
``prequential_shuffled`` protocol of olb). olb runs its protocol (:func:`olb.protocol.run_stream`: the one loop
every cell runs, with its accuracy and learning curve); its figure is the CPU seconds of the thread that runs the
stream (the process's would count the JVM's own threads, running beside it), the kernels loaded before. MOA runs
its own Java loop, ``moa.tasks.EvaluatePrequential`` over a ``CachedInstancesStream`` (the rows as one Java ``Instances``, built before timing), so that no Python/JPype call
counts against it; its figure is the task's own CPU seconds of its loop (the thread's, JIT compiler and garbage
collector threads left out). Both compute the prequential accuracy over the whole stream.

Warm: each learner streams untimed before the rounds (olb: the kernels' loading; MOA: the JVM's JIT), over the data
set again and again until ``WARM_EXAMPLES`` examples have passed or ``WARM_CPU_S`` seconds of CPU are spent, at least
once: HotSpot compiles a method after some ten thousand calls, so one pass of a small data set (cars: 1,728 rows)
leaves MOA's tree interpreted (4x slower there). MOA's warm-up is reported as its first run's CPU over the warm
median. The JVM's start-up (wall and CPU seconds) is reported apart. Every round
runs each row once for each side, interleaved (which side goes first alternates by round); the figures are the
medians over rounds, the ratio olb / MOA is the median of the rounds' ratios (below 1: olb is faster).

``--out FILE.csv`` writes one line per (data set, row, figure) in the layout of olb's result tables (``dataset,
algorithm, metric, mean``, ...: each figure one value, a median over rounds) and a ``.json`` beside it with the machine, the load
and the JVM figures; docs/speed.md's tables are generated from it (``olb.ops.doc_tables``).
``--table-from FILE.json`` writes the ``.csv`` again from such a record.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from olb.data import load_dataset
from olb.protocol import make_phases, run_stream
from olb.learners.registry import get_algorithm
from olb.weak import VFDTForest

DATASETS = ("balance", "cars", "mushroom", "nursery")
GRACE, DELTA, TAU = 12, 0.1, 0.1  # within olb's random ranges (olb.weak.base), near their geometric middles
TREE = f"trees.HoeffdingTree -g {GRACE} -c {DELTA} -t {TAU} -l MC"
WARM_EXAMPLES, WARM_CPU_S = 100_000, 5.0  # each learner's untimed warm-up: this many examples, or this much CPU


@dataclass(frozen=True)
class Row:
    """One line of the comparison: olb's learner with ``trees`` matched trees against MOA's ``moa`` learner."""

    label: str
    olb: str
    trees: int
    moa: str


ROWS = {
    "vfdt": Row("VFDT, 1 tree", "best_vfdt", 1, TREE),
    **{
        f"{name}-{n}": Row(f"{label}, {n} trees", name, n, f"meta.OzaBoost -l ({TREE}) -s {n}")
        for n in (20, 100)
        for name, label in (("oza", "Oza"), ("adaolm", "Adaboost.OLM"), ("onlinembbm", "OnlineMBBM"))
    },
}


# ------------------------------------------------------------------ olb
def olb_learner(row: Row, n_features: int, n_labels: int, seed: int):
    """olb's learner of ``row``, its trees replaced by a forest of ``TREE``'s settings (every feature)."""
    learner = get_algorithm(row.olb)(n_features, n_labels, seed=seed, num_learners=row.trees)
    forest = VFDTForest(
        row.trees,
        n_features,
        n_labels,
        num_covariates=n_features,
        delta_range=(DELTA, DELTA),
        tau_range=(TAU, TAU),
        grace_range=(GRACE, GRACE),
        seed=seed,
    )
    setattr(learner, "weak" if hasattr(learner, "weak") else "trees", forest)
    return learner


def run_olb(row: Row, data, seed: int) -> tuple[float, float]:
    """(CPU seconds of the stream, accuracy) of one olb run: this thread's CPU, as MOA's is its loop's thread's (the
    JVM's compiler and collector threads run in this process too, and would count in the process's CPU)."""
    learner = olb_learner(row, data.n_features, data.n_labels, seed)
    phases = make_phases(data, "prequential_shuffled", rng=np.random.default_rng(seed))
    started = time.thread_time()
    result = run_stream(learner, data, phases, metrics=("accuracy",))
    return time.thread_time() - started, result.metrics["accuracy"]


# ------------------------------------------------------------------ MOA
def moa_jar() -> Path:
    """The MOA jar CapyMOA ships (found without importing capymoa)."""
    spec = importlib.util.find_spec("capymoa")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bench_moa: MOA's jar comes with capymoa (pip install capymoa jpype1)")
    return Path(next(iter(spec.submodule_search_locations))) / "jar" / "moa.jar"


def start_jvm() -> dict[str, float]:
    """Start the JVM with MOA's jar and load the classes the runs use: wall and CPU seconds."""
    import jpype

    wall, cpu = time.perf_counter(), time.process_time()
    jpype.startJVM(classpath=[str(moa_jar())], convertStrings=True)
    jpype.JClass("moa.tasks.EvaluatePrequential")
    return {"jvm_start_wall_s": time.perf_counter() - wall, "jvm_start_cpu_s": time.process_time() - cpu}


def moa_instances(data, order: np.ndarray):
    """The rows of ``data`` in ``order`` as a Java ``Instances`` (numeric features, a nominal class)."""
    import jpype

    samoa = "com.yahoo.labs.samoa.instances."
    Attribute, Instances, DenseInstance = (jpype.JClass(samoa + n) for n in ("Attribute", "Instances", "DenseInstance"))
    ArrayList = jpype.JClass("java.util.ArrayList")
    attributes = ArrayList()
    for j in range(data.n_features):
        attributes.add(Attribute(f"x{j}"))
    classes = ArrayList()
    for c in range(data.n_labels):
        classes.add(f"c{c}")
    attributes.add(Attribute("class", classes))
    instances = Instances(data.name, attributes, len(order))
    instances.setClassIndex(data.n_features)
    values = np.column_stack([data.X[order], data.Y[order]]).astype(float)  # NaN: MOA's missing value too
    for line in values:
        instance = DenseInstance(1.0, jpype.JArray(jpype.JDouble)(line))
        instance.setDataset(instances)
        instances.add(instance)
    return instances


def run_moa(cli: str, instances, seed: int) -> tuple[float, float]:
    """(CPU seconds of MOA's loop, accuracy) of one ``EvaluatePrequential`` run of the learner ``cli``."""
    import jpype

    task = jpype.JClass("moa.tasks.EvaluatePrequential")()
    n = instances.numInstances()
    task.getOptions().setViaCLIString(f"-e BasicClassificationPerformanceEvaluator -i {n} -f {n} -q {n}")
    learner = jpype.JClass("moa.options.ClassOption").cliStringToObject(
        cli, jpype.JClass("moa.classifiers.Classifier"), None
    )
    learner.setRandomSeed(seed)  # OzaBoost's Poisson draws (a Hoeffding tree draws nothing)
    task.learnerOption.setCurrentObject(learner)
    task.streamOption.setCurrentObject(jpype.JClass("moa.streams.CachedInstancesStream")(instances))
    task.prepareForUse()
    curve = task.doTask(jpype.JClass("moa.tasks.NullMonitor")(), None)
    last = curve.numEntries() - 1
    names = [str(name) for name in curve.getMeasurementNames()]
    cpu = curve.getMeasurement(last, names.index("evaluation time (cpu seconds)"))
    accuracy = curve.getMeasurement(last, names.index("classifications correct (percent)")) / 100.0
    return float(cpu), float(accuracy)


# ------------------------------------------------------------------ the comparison
def compare(datasets, rows: list[str], rounds: int, seed: int) -> tuple[list[dict], dict]:
    jvm = start_jvm()
    results, warmups = [], {}
    for name in datasets:
        data = load_dataset(name)
        order = np.random.default_rng(seed).permutation(data.n_examples)
        instances = moa_instances(data, order)
        moa_learners = dict.fromkeys(ROWS[r].moa for r in rows)  # MOA's OzaBoost serves three rows
        first = {cli: warm_up(lambda cli=cli: run_moa(cli, instances, seed), data.n_examples) for cli in moa_learners}
        for r in rows:
            warm_up(lambda r=r: run_olb(ROWS[r], data, seed), data.n_examples)
        olb_runs: dict[str, list] = {r: [] for r in rows}
        moa_runs: dict[str, list] = {cli: [] for cli in moa_learners}
        for k in range(rounds):
            for r in rows:
                sides = [("olb", r), ("moa", ROWS[r].moa)]
                for side, key in sides if k % 2 == 0 else sides[::-1]:
                    if side == "olb":
                        olb_runs[key].append(run_olb(ROWS[key], data, seed))
                    elif len(moa_runs[key]) <= k:  # once per round per MOA learner
                        moa_runs[key].append(run_moa(key, instances, seed))
        n = data.n_examples
        for r in rows:
            olb_cpu = [c for c, _ in olb_runs[r]]
            moa_cpu = [c for c, _ in moa_runs[ROWS[r].moa]]
            line = {
                "dataset": name,
                "row": r,
                "label": ROWS[r].label,
                "examples": n,
                "olb_us": 1e6 * statistics.median(olb_cpu) / n,
                "moa_us": 1e6 * statistics.median(moa_cpu) / n,
                "ratio": statistics.median(o / m for o, m in zip(olb_cpu, moa_cpu, strict=True)),
                "ratio_range": [
                    min(o / m for o, m in zip(olb_cpu, moa_cpu)),
                    max(o / m for o, m in zip(olb_cpu, moa_cpu)),
                ],
                "olb_accuracy": olb_runs[r][0][1],
                "moa_accuracy": moa_runs[ROWS[r].moa][0][1],
            }
            results.append(line)
            print(
                f"{name:<9} {ROWS[r].label:<24} olb {line['olb_us']:8.1f} us  MOA {line['moa_us']:8.1f} us  "
                f"olb/MOA {line['ratio']:5.2f} ({line['ratio_range'][0]:.2f}-{line['ratio_range'][1]:.2f})  "
                f"accuracy olb {line['olb_accuracy']:.4f} MOA {line['moa_accuracy']:.4f}",
                flush=True,
            )
        for cli in moa_learners:
            warm = statistics.median(c for c, _ in moa_runs[cli])
            warmups[f"{name}: {cli}"] = first[cli] / warm if warm else float("nan")
    return results, {**jvm, "moa_first_run_over_warm": warmups}


def warm_up(run, n_examples: int) -> float:
    """Run ``run`` (it returns its CPU seconds first) untimed over ``n_examples`` rows a pass until ``WARM_EXAMPLES``
    examples have passed or ``WARM_CPU_S`` seconds are spent, at least once: the first run's CPU seconds."""
    first = spent = run()[0]
    examples = n_examples
    while examples < WARM_EXAMPLES and spent < WARM_CPU_S:
        spent += run()[0]
        examples += n_examples
    return first


def machine() -> dict[str, str | float]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor(),
    )
    return {"cpu": cpu, "cores": os.cpu_count() or 0, "python": platform.python_version(), "java": _java_version()}


def _java_version() -> str:
    import jpype

    return str(jpype.JClass("java.lang.System").getProperty("java.version")) if jpype.isJVMStarted() else ""


# the columns of olb's result tables (olb.grid.reporting.export) that a benchmark has no value for
_ABSENT = {"std": float("nan"), "paper": float("nan"), "diff": float("nan"), "n_values": 1, "n_values_planned": 1}
_ABSENT.update({"partial": False, "selected": "", "n_failed": 0, "note": "", "best": False})


def write_table(out: Path, results: list[dict]) -> None:
    """The comparison as a result table (``out``, olb's layout: one line per data set, row and figure)."""
    figures = [
        (r["dataset"], r["label"], metric, value)
        for r in results
        for metric, value in (
            ("olb us/example", r["olb_us"]),
            ("MOA us/example", r["moa_us"]),
            ("olb / MOA", r["ratio"]),
            ("olb accuracy", r["olb_accuracy"]),
            ("MOA accuracy", r["moa_accuracy"]),
        )
    ]
    write_result_table(out, figures)


def write_result_table(out: Path, figures: list[tuple[str, str, str, float]]) -> None:
    """A benchmark's figures (data set, row, metric, value) as a result table (``out``, olb's layout: one line per
    figure, one value each, as a median over rounds is), for the docs' generated tables."""
    import pandas as pd

    lines = [
        {"dataset": dataset, "algorithm": row, "metric": metric, "mean": value, "n_seeds": 1, "n_planned": 1, **_ABSENT}
        for dataset, row, metric, value in figures
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(lines).to_csv(out, index=False)


def write(out: Path, results: list[dict], extra: dict, rounds: int, load: tuple[float, float]) -> None:
    """The table (``out``) and its record (``out`` with ``.json``: the machine, the load, every figure)."""
    write_table(out, results)
    record = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "load_average_before_after": list(load),
        "rounds": rounds,
        "tree": TREE,
        **extra,
        "results": results,
    }
    out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="a .csv to store the table in (and a .json beside it)")
    parser.add_argument("--table-from", type=Path, help="only write the .csv beside this stored .json record")
    args = parser.parse_args()
    if args.table_from:
        record = json.loads(args.table_from.read_text())
        write_table(args.table_from.with_suffix(".csv"), record["results"])
        return
    load_before = os.getloadavg()[0]
    results, extra = compare(args.datasets, args.rows, args.rounds, args.seed)
    load = (load_before, os.getloadavg()[0])
    print(
        f"JVM start-up {extra['jvm_start_wall_s']:.2f} s wall, {extra['jvm_start_cpu_s']:.2f} s CPU; MOA's first run "
        f"over its warm median: {min(extra['moa_first_run_over_warm'].values()):.2f}-"
        f"{max(extra['moa_first_run_over_warm'].values()):.2f}x; load average {load[0]:.1f} -> {load[1]:.1f}"
    )
    if args.out:
        write(args.out, results, extra, args.rounds, load)


if __name__ == "__main__":
    main()
