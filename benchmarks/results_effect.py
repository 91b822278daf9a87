"""Does a change that is not bit-identical move a paper table's results beyond noise?

Plans an experiment's cells exactly as the grid does (``+experiment=NAME``, its algorithms, hyperparameters,
protocol and seeds), keeps those on ``--datasets``, and runs every cell twice: as commit ``--against REV`` runs it
(extracted with ``git archive``, as ``bench_speed.py --against`` does) and as this checkout runs it -- or, with
``--option KEY=VALUE``, as this checkout runs it without and with that hyperparameter. Then, per table cell
(algorithm entry, data set, hyperparameters; over the seeds), it prints the mean of the experiment's first metric
on each side with its standard error, the difference in standard errors of the first side, whether the second
mean lies within one standard error of the first, and on how many seeds both sides gave the same value.

    python benchmarks/results_effect.py --against 551ecc0 --experiment table3 --datasets emotions scene yeast
    python benchmarks/results_effect.py --option num_covariates=10 --experiment table3 --datasets emotions
    python benchmarks/results_effect.py --against 551ecc0 --experiment topk_table1 --datasets emotions --seeds 3

Cells run in child processes (``--jobs`` at a time, each side's children with their own numba cache).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve()


def planned_cells(experiment: str, datasets: list[str], seeds: int | None, entries: list[str] | None) -> list:
    """The experiment's cells on ``datasets`` (of its algorithm ``entries`` and its first ``seeds`` seeds if given),
    as the grid plans them."""
    from olb.grid.cli import compose
    from olb.grid.planning.expand import plan_grid

    overrides = [f"+experiment={experiment}", "allow_unavailable=true"]
    cells = [c for c in plan_grid(compose(overrides)).cells if c.dataset in datasets]
    if entries:
        cells = [c for c in cells if c.entry in entries]
    if seeds is not None:
        first = sorted({c.seed for c in cells})[:seeds]
        cells = [c for c in cells if c.seed in first]
    return cells


def child(specs: list[dict]) -> None:
    """Run the cells ``specs`` (CellSpec keyword arguments) in this process; print their metrics as JSON."""
    from olb.run import CellSpec, run_cell

    out = []
    for spec in specs:
        spec["metrics"] = tuple(spec["metrics"])
        out.append(dict(run_cell(CellSpec(**spec)).stream.metrics))
    print(json.dumps(out))


def run_side(specs: list[list[dict]], env: dict, scratch: str, jobs: int) -> list[list[dict]]:
    """Each batch of ``specs`` in a child process of checkout ``env``, ``jobs`` at a time."""

    def one(batch: list[dict]) -> list[dict]:
        cmd = [sys.executable, str(HERE), "--child", json.dumps(batch)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=scratch)
        if done.returncode:
            raise SystemExit(f"results_effect: a cell failed:\n{done.stderr[-2000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, specs))


def parsed(value: str):
    """A command-line hyperparameter value: JSON where it parses (numbers, true/false), else the string."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def summary(values: list[float]) -> tuple[float, float]:
    """Mean and standard error (nan for one value)."""
    se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else float("nan")
    return statistics.mean(values), se


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    side = parser.add_mutually_exclusive_group()
    side.add_argument("--against", metavar="REV", help="compare this checkout with commit REV")
    side.add_argument("--option", metavar="KEY=VALUE", help="compare this checkout without and with a hyperparameter")
    parser.add_argument("--experiment", default="table3")
    parser.add_argument("--datasets", nargs="+", default=["emotions", "scene", "yeast"])
    parser.add_argument("--seeds", type=int, help="only the experiment's first S seeds")
    parser.add_argument("--entries", nargs="+", help="only these algorithm entries of the experiment")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(json.loads(args.child))
    if not (args.against or args.option):
        parser.error("give --against REV or --option KEY=VALUE")

    cells = planned_cells(args.experiment, args.datasets, args.seeds, args.entries)
    if not cells:
        raise SystemExit(f"results_effect: {args.experiment} has no cells on {', '.join(args.datasets)}")
    metric = cells[0].metrics[0]
    fields = ("algorithm", "dataset", "seed", "params", "protocol", "loops", "curve_every")  # CellSpec's, in any tree
    base = [dict({key: getattr(c, key) for key in fields}, metrics=[metric]) for c in cells]
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="olb-effect-") as scratch:
        repo = str(HERE.parents[1])
        env = {**os.environ, "PYTHONPATH": repo, "NUMBA_CACHE_DIR": os.path.join(scratch, "numba-this")}
        if args.against:
            from bench_speed import extract

            old_tree = extract(args.against, scratch)
            old_env = {**os.environ, "PYTHONPATH": old_tree, "NUMBA_CACHE_DIR": os.path.join(scratch, "numba-rev")}
            sides = {args.against: (old_env, base), "this": (env, base)}
        else:
            key, value = args.option.split("=", 1)
            changed = [dict(s, params={**s["params"], key: parsed(value)}) for s in base]
            sides = {"without": (env, base), args.option: (env, changed)}
        results = {}
        for label, (side_env, specs) in sides.items():  # one child per table cell: its seeds share the imports
            groups: dict[str, list[int]] = {}
            for i, c in enumerate(cells):
                varying = " ".join(f"{k}={v}" for k, v in c.varying)
                groups.setdefault(f"{c.dataset}|{c.label} {varying}".strip(), []).append(i)
            batches = [[specs[i] for i in idx] for idx in groups.values()]
            values = run_side(batches, side_env, scratch, args.jobs)
            results[label] = {g: [v[metric] for v in vals] for g, vals in zip(groups, values)}
    first, second = results
    print(f"{args.experiment}: {metric}, {first} against {second}, {len(cells)} cells on each side, "
          f"{time.time() - start:.0f} s wall")  # fmt: skip
    print(
        f"{'data set':<10} {'cell':<34} {first + ' mean (se)':>22} {second + ' mean (se)':>22} {'diff/se':>8}  within"
    )
    moved = 0
    for group, a in results[first].items():
        b = results[second][group]
        (m0, se0), (m1, se1) = summary(a), summary(b)
        within = abs(m1 - m0) <= se0
        moved += not within
        dataset, label = group.split("|")
        same = sum(x == y for x, y in zip(a, b))
        print(
            f"{dataset:<10} {label:<34} {m0:>13.4f} ({se0:.4f}) {m1:>13.4f} ({se1:.4f}) "
            f"{(m1 - m0) / se0 if se0 else 0.0:>8.2f}  {'yes' if within else 'NO'} ({same}/{len(a)} seeds identical)"
        )
    print(f"{len(results[first]) - moved} of {len(results[first])} means within one standard error")


if __name__ == "__main__":
    main()
