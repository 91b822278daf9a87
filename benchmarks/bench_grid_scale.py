"""How planning, the dry run and the final table grow with the grid: 1,000, 10,000 and 100,000 cells.

    python benchmarks/bench_grid_scale.py [--sizes 1000 10000 100000] [--seeds 100]

Each grid is the stub learner ``_grid_stub`` (olb/ops/testing.py) on the embedded emotions, ``--seeds`` seeds
times ``size / seeds`` values of its ``fail_at`` hyperparameter (all beyond the stream: no cell would fail), so
nothing is downloaded. Per size, each in a fresh process:

- whole process: ``python -m olb.grid dry_run=true ...`` from start to exit (imports, Hydra, planning, the data
  check, the resume query against a store that does not exist), and its peak resident memory;
- in process (after composing the config and importing MLflow's SQL store and scipy: fixed costs, in the
  whole-process figure): planning (``prepare``: every check, the cells, the data), the dry run
  (``dry_run``: the same plus resume, cost, memory), the final table (cells.csv's frame, table.csv, the coverage,
  table.md) from an outcome per cell, and the process's peak resident memory. The outcomes are made up (every
  cell finished, seeded random metrics): the table's time does not depend on the values;
- the dry run's resume query (the store opened read-only, every finished cell of the experiment read and matched
  against the plan) against an empty store (it exists, the experiment does not) and a small one (a grid of
  ``--store-cells`` finished cells of the same experiment, recorded first).

Then the growth of each figure per 10x more cells (its time at 10x over its time at x: 10 is linear).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def grid(size: int, seeds: int, store: Path) -> list[str]:
    """The overrides of a grid of ``size`` stub cells, tracked in ``store``."""
    values = ",".join(str(-1 if i == 0 else 10**6 + i) for i in range(max(1, size // seeds)))
    return [
        "imports=[olb.ops.testing]",
        "algorithms=[_grid_stub]",
        "datasets=[emotions]",
        f"seeds={seeds}",
        f"+algorithm._grid_stub.params.fail_at=[{values}]",
        "name=scale",
        f"tracking.uri=sqlite:///{store}",
    ]


def peak_rss_mb(usage: resource.struct_rusage) -> float:
    return usage.ru_maxrss / 1024  # kB on Linux


def whole_process(overrides: list[str], workdir: Path) -> tuple[float, float]:
    """Wall seconds and peak resident MB of ``python -m olb.grid dry_run=true`` with ``overrides``."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "olb.grid", "dry_run=true", *overrides],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"bench_grid_scale: the dry run failed: {process.stderr.read().decode()[-2000:]}")
    return wall, peak_rss_mb(usage)


def in_process(overrides: list[str], stores: dict[str, Path]) -> dict:
    """The in-process figures of one grid (run in a fresh process: ``--one``)."""
    from olb.grid import compose
    from olb.grid.reporting.comparable import differences
    from olb.grid.reporting.coverage import cover
    from olb.grid.driver.dryrun import dry_run, read_only_tracker
    from olb.grid.reporting.markdown import TableLayout, grid_title, table_markdown
    from olb.grid.messages import CellOutcome, Status
    from olb.grid.recording.recorder import resumed_outcomes
    from olb.grid.recording.results import cells_frame
    from olb.grid.driver.stages import prepare
    from olb.grid.reporting.table import build_table

    # imported before the clocks start: fixed costs, in the whole-process figure
    import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
    import mlflow.tracking  # noqa: F401
    import scipy.stats  # noqa: F401

    cfg = compose(overrides)
    figures = {}
    t0 = time.perf_counter()
    plan, data = prepare(cfg)
    figures["cells"] = len(plan.cells)
    figures["planning_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    dry_run(cfg)
    figures["dry_run_s"] = time.perf_counter() - t0
    for name, store in stores.items():
        on_store = compose([*overrides, f"tracking.uri=sqlite:///{store}"])
        t0 = time.perf_counter()
        tracker, _ = read_only_tracker(on_store)
        figures[f"resume_{name}"] = len(resumed_outcomes(tracker, on_store, plan, data))
        figures[f"resume_{name}_s"] = time.perf_counter() - t0
    rng = random.Random(0)
    outcomes = {
        c.cell_id: CellOutcome(
            status=Status.FINISHED,
            metrics={m: rng.random() for m in c.measured},
            runtimes={"runtime_s": rng.random(), "cpu_s": rng.random()},
            source="run",
        )
        for c in plan.unique_cells
    }
    t0 = time.perf_counter()
    cells_frame(plan, outcomes, data)
    table = build_table(
        plan, outcomes, cfg.reference, data.unavailable, differences(plan, cfg.reference, cfg.verify_checksums)
    )
    table = cover(table, cfg.reference, plan.entries, plan.datasets, data.unavailable, plan.lower_is_better)
    layout = TableLayout(list(cfg.table.rows), list(cfg.table.columns), cfg.table.decimals, cfg.table.bold_best)
    table_markdown(table, grid_title(cfg, plan, []), layout)
    figures["table_s"] = time.perf_counter() - t0
    figures["table_rows"] = len(table)
    figures["peak_mb"] = peak_rss_mb(resource.getrusage(resource.RUSAGE_SELF))
    return figures


def small_store(path: Path, cells: int, workdir: Path) -> None:
    """A store holding ``cells`` finished stub cells of the benchmark's experiment (one setting, ``cells`` seeds)."""
    from olb.grid import compose, run_grid

    overrides = [*grid(1, 1, path)[:4], f"seeds={cells}", "name=scale", f"tracking.uri=sqlite:///{path}"]
    settings = ["backend=serial", "plots=false", "tracking.cell_artifacts=false"]  # what the store is read for
    outcome = run_grid(compose([*overrides, *settings]), workdir / "small-store-run", stream=io.StringIO())
    if outcome.n_run != cells:
        raise SystemExit(f"bench_grid_scale: the small store recorded {outcome.n_run} of {cells} cells")


def empty_store(path: Path) -> None:
    """A store that exists with no experiment of the benchmark's."""
    from mlflow.tracking import MlflowClient

    MlflowClient(f"sqlite:///{path}").search_experiments()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--store-cells", type=int, default=200, help="finished cells in the small store")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # one size's in-process figures, as JSON
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        workdir = args.workdir
        stores = {"empty": workdir / "empty.db", "small": workdir / "small.db"}
        overrides = grid(args.one, args.seeds, workdir / "absent.db")
        print(json.dumps(in_process(overrides, stores)))
        return
    with tempfile.TemporaryDirectory(prefix="olb-bench-scale-") as tmp:
        workdir = Path(tmp)
        empty_store(workdir / "empty.db")
        small_store(workdir / "small.db", args.store_cells, workdir)
        rows = []
        for size in args.sizes:
            wall, rss = whole_process(grid(size, args.seeds, workdir / "absent.db"), workdir)
            one = subprocess.run(
                [sys.executable, __file__, "--one", str(size), "--seeds", str(args.seeds), "--workdir", tmp],
                capture_output=True,
                text=True,
                check=True,
            )
            figures = json.loads(one.stdout.strip().splitlines()[-1])
            rows.append({"size": size, "process_s": wall, "process_mb": rss, **figures})
            print(
                f"{figures['cells']:>7,} cells: planning {figures['planning_s']:6.2f} s, dry run {figures['dry_run_s']:6.2f} s "
                f"in process / {wall:6.2f} s whole process ({rss:,.0f} MB), final table {figures['table_s']:6.2f} s "
                f"({figures['table_rows']:,} rows), resume query: empty store {figures['resume_empty_s']:.2f} s, "
                f"small store {figures['resume_small_s']:.2f} s ({figures['resume_small']} of "
                f"{args.store_cells} finished cells in the plan); peak {figures['peak_mb']:,.0f} MB in process",
                flush=True,
            )
    keys = {
        "planning": "planning_s",
        "dry run (in process)": "dry_run_s",
        "dry run (whole process)": "process_s",
        "final table": "table_s",
        "resume query, small store": "resume_small_s",
        "peak memory (in process)": "peak_mb",
    }
    print("\ngrowth per 10x cells (10: linear)")
    for a, b in zip(rows, rows[1:]):
        ratios = ", ".join(f"{name} x{b[key] / a[key]:.1f}" for name, key in keys.items())
        print(f"  {a['cells']:,} -> {b['cells']:,} ({b['cells'] / a['cells']:.0f}x): {ratios}")


if __name__ == "__main__":
    main()
