"""Fan-out efficiency of olb.grid on Ray, and Ray's fixed start-up cost.

    python benchmarks/bench_fanout.py [--cells-per-core 4] [--num-learners 100] [--dataset emotions] [--tracking]

1. Start-up: ``ray.init`` as the grid calls it (local, quiet, no dashboard), then the first task's round trip
   (a worker process starts and imports olb), then the per-task overhead of 200 empty tasks.
2. Fan-out: a grid of ``cells-per-core x cores`` equal cells (Ada.OLMR on one data set, one cell per seed),
   run twice through ``run_grid`` on that Ray: "cold" (each worker imports olb on its first cell) and "warm".
   Efficiency = sum of the cells' runtimes / (cores x wall time of the fan-out): 1.0 means the cores did
   nothing but cells. The serial backend's wall time for the same cells is printed for comparison.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells-per-core", type=int, default=4)
    ap.add_argument("--num-learners", type=int, default=100)
    ap.add_argument("--dataset", default="emotions")
    ap.add_argument("--cores", type=int, default=os.cpu_count())
    ap.add_argument("--tracking", action="store_true", help="log every cell to a temporary MLflow SQLite store")
    ap.add_argument("--no-serial", action="store_true", help="skip the serial baseline")
    args = ap.parse_args(argv)

    from olb.grid import compose, run_grid
    from olb.grid.running.backends import LocalRayBackend
    from olb.grid.planning.config import BackendConfig

    work = Path(tempfile.mkdtemp(prefix="olb-bench-"))
    local = LocalRayBackend(BackendConfig(num_cpus=args.cores, temp_dir=f"/tmp/olbb-{os.getpid()}"))
    import ray

    print(
        f"machine: {os.cpu_count()} cores; using {args.cores}; python {sys.version.split()[0]}; ray {ray.__version__}"
    )
    t0 = time.perf_counter()
    local.start()
    init_s = time.perf_counter() - t0

    @ray.remote(num_cpus=1)
    def first():
        import olb.run  # noqa: F401 - what a cell imports

        return os.getpid()

    @ray.remote(num_cpus=1)
    def empty():
        return None

    t0 = time.perf_counter()
    ray.get(first.remote())
    first_s = time.perf_counter() - t0
    ray.get([empty.remote() for _ in range(20)])
    t0 = time.perf_counter()
    ray.get([empty.remote() for _ in range(200)])
    per_task_ms = (time.perf_counter() - t0) / 200 * 1000
    print("\nRay start-up (fixed cost)")
    print(f"  ray.init (local, quiet)             {init_s:7.2f} s")
    print(f"  first task round trip (+import olb) {first_s:7.2f} s")
    print(f"  per-task overhead, 200 empty tasks  {per_task_ms:7.2f} ms")

    n_cells = args.cells_per_core * args.cores
    overrides = [
        "algorithms=[adaolmr]",
        f"datasets=[{args.dataset}]",
        f"seeds={n_cells}",
        f"num_learners={args.num_learners}",
        "plots=false",
        "resume=false",
        "name=bench_fanout",
    ]
    overrides += [f"tracking.uri=sqlite:///{work / 'mlflow.db'}"] if args.tracking else ["tracking=off"]
    rows = []
    try:
        for label in ("cold", "warm"):
            if label == "cold":
                # fresh workers: the ones started above already imported olb, so restart Ray for a cold run
                local.stop()
                t0 = time.perf_counter()
                local.start()
                restart_s = time.perf_counter() - t0
            o = run_grid(compose([*overrides, "backend=ray"]), work / label, stream=open(os.devnull, "w"))
            assert o.exit_code == 0, o.failures
            busy = float(o.cells["runtime_s"].sum())
            rows.append((f"ray, {label} workers", o.fanout_s, busy, o.efficiency, o.cells["runtime_s"].mean()))
        if not args.no_serial:
            o = run_grid(compose([*overrides, "backend=serial"]), work / "serial", stream=open(os.devnull, "w"))
            busy = float(o.cells["runtime_s"].sum())
            rows.append(("serial (1 core)", o.fanout_s, busy, busy / o.fanout_s, o.cells["runtime_s"].mean()))
    finally:
        local.stop()
        shutil.rmtree(work, ignore_errors=True)

    print(
        f"\nFan-out: {n_cells} equal cells (adaolmr, {args.dataset}, num_learners={args.num_learners}, one seed each) "
        f"on {args.cores} cores, tracking {'MLflow SQLite' if args.tracking else 'off'}"
    )
    print(f"  {'run':<22} {'wall s':>8} {'sum cells s':>12} {'mean cell s':>12} {'efficiency':>11}")
    for name, wall, busy, eff, mean in rows:
        print(f"  {name:<22} {wall:8.2f} {busy:12.2f} {mean:12.2f} {eff:11.1%}")
    print("  efficiency = sum of cell runtimes / (cores x fan-out wall time); serial: / (1 x wall)")
    print(
        f"  (Ray restart for the cold run: {restart_s:.2f} s; a grid's fixed cost is ray.init + the first round trip)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
