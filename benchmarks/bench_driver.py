"""The grid driver's throughput and each cell's overhead outside the learner, split into its parts.

    python benchmarks/bench_driver.py [--cells 2000] [--tracking-uri URI] [--resume-sizes 1000,10000]
                                      [--client-cells 300] [--transfer-cells 2000] [--worker-cells 50] [--wide-node]

Cells of the stub learner ``_grid_stub`` (``olb.ops.testing``) on emotions, one per seed. Needs the emotions
files (``$OLB_DATA_DIR``).

1. **Driver**: ``--cells`` results (copies of one real cell's result, one per planned cell) handed to the grid's
   recorder (:class:`olb.grid.recording.recorder.Recorder`) and progress bar as ``fan_out`` hands them, then flushed to the
   tracking store (``--tracking-uri``: default a fresh SQLite file; an ``http://`` MLflow server works too). Prints
   the driver's cells/s from the first result to the last written, and per cell: the driver's recording (its
   loop's share), the writer's time (in its thread) and the progress bar.
   With ``--client-cells`` N, the same for N cells through MLflow's public client, the path a SQL store takes
   when its schema is not one olb's bulk writer was tested with (:mod:`olb.grid.recording.tracking_sql`), and
   their resume look-up.
2. **Resume look-up**: :func:`olb.grid.recording.recorder.resumed_outcomes` against a store holding N finished cells, for
   each N of ``--resume-sizes`` (its own experiment each), and its growth.
3. **Result transfer**: a local Ray (2 CPUs) returns ``--transfer-cells`` such results; the driver's time to take
   them (``ray.wait`` and ``ray.get`` in batches, as the Ray backend does) per cell.
4. **Worker-side overhead**: ``--worker-cells`` cells through :func:`olb.grid.running.worker.execute_cell` in this process;
   each cell's time outside the learner's stream (``runtime_s``): imports, data loading and checks, the result.
5. ``--wide-node``: the simulated wide node, ``python -m olb.grid`` with a local Ray of ``--wide-cpus`` CPUs running
   ``--wide-cells`` cells that each sleep 1 s; its fan-out efficiency, and how busy the machine's cores were.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STUB = ["imports=[olb.ops.testing]", "algorithms=[_grid_stub]", "datasets=[emotions]", "plots=false"]


def grid_config(n_cells: int, name: str, uri: str | None):
    from olb.grid import compose

    tracking = [f"tracking.uri={uri}"] if uri else ["tracking=off"]
    return compose([*STUB, f"seeds={n_cells}", f"name={name}", "backend=serial", *tracking])


def one_result(cfg, plan):
    """A real result of the plan's first cell (its copies stand for the others)."""
    from olb.grid.messages import CellTask
    from olb.grid.driver.stages import grid_data_dir
    from olb.grid.running.worker import execute_cell

    cell = plan.unique_cells[0]
    task = CellTask(cell.cell_id, cell.spec(grid_data_dir(cfg)), imports=tuple(cfg.imports))
    return execute_cell(task)


def drive(cfg, plan, data, message, out: Path) -> dict:
    """Every cell's result through the recorder and the progress bar; the times (s) of each part."""
    from olb.grid.running.progress import Progress
    from olb.grid.recording.recorder import Recorder, open_tracker

    tracker = open_tracker(cfg, "bench")
    tracker.start_parent("bench", {}, {}, "")
    messages = [dataclasses.replace(message, cell_id=c.cell_id) for c in plan.unique_cells]
    recorder = Recorder(plan, data, tracker, {}, out)
    progress = Progress(len(messages), stream=io.StringIO(), slots=32)
    record_s = progress_s = 0.0
    t_start = time.perf_counter()
    for m in messages:
        t0 = time.perf_counter()
        recorder(m)
        t1 = time.perf_counter()
        progress.update(m.status, 32, 0.0)
        t2 = time.perf_counter()
        record_s += t1 - t0
        progress_s += t2 - t1
    fed_s = time.perf_counter() - t_start
    getattr(recorder, "flush", lambda: None)()  # the driver before its writer thread had none
    total_s = time.perf_counter() - t_start
    writer = getattr(recorder, "writer", None)
    stats = writer.stats if writer is not None else None
    tracker.finish_parent("FINISHED", {}, [])
    return {
        "tracker": tracker,
        "total_s": total_s,
        "fed_s": fed_s,
        "record_s": record_s,
        "progress_s": progress_s,
        "write_s": stats.write_s if stats else record_s,
        "write_cpu_s": stats.write_cpu_s if stats else float("nan"),
        "batches": stats.batches if stats else len(messages),
        "untracked": len(recorder.untracked),
    }


@contextlib.contextmanager
def untested_schema():
    """Within: no MLflow schema is one the bulk writer was tested with, so trackers opened write through MLflow's
    client."""
    from olb.grid.recording import tracking_sql

    tested = tracking_sql.TESTED_SCHEMAS
    tracking_sql.TESTED_SCHEMAS = frozenset()
    try:
        yield
    finally:
        tracking_sql.TESTED_SCHEMAS = tested


def resume_lookup(cfg, plan, data, tracker) -> tuple[float, int]:
    from olb.grid.recording.recorder import resumed_outcomes

    t0 = time.perf_counter()
    found = resumed_outcomes(tracker, cfg, plan, data)
    return time.perf_counter() - t0, len(found)


def transfer(message, n: int) -> float:
    """Seconds per result the driver spends taking ``n`` finished results from a local Ray, in batches."""
    import ray

    from olb.grid.running.backends import LocalRayBackend
    from olb.grid.planning.config import BackendConfig

    local = LocalRayBackend(BackendConfig(num_cpus=2, temp_dir=f"/tmp/olbd-{os.getpid()}"))
    local.start()  # as the grid starts it: private, on loopback, with a token
    try:

        @ray.remote(num_cpus=1)
        def answer(m, cell_id):
            return dataclasses.replace(m, cell_id=cell_id)

        ref = ray.put(message)
        refs = [answer.remote(ref, f"c{i}") for i in range(n)]
        ray.wait(refs, num_returns=n, timeout=300, fetch_local=False)  # all computed; now only the taking
        t0 = time.perf_counter()
        pending, got = list(refs), 0
        while pending:
            done, pending = ray.wait(pending, num_returns=len(pending), timeout=0)
            got += len(ray.get(done))
        return (time.perf_counter() - t0) / got
    finally:
        local.stop()


def worker_overhead(cfg, plan, n: int) -> tuple[list[float], list[float]]:
    """Each cell's seconds in :func:`execute_cell` outside its learner's stream: wall (beyond ``runtime_s``) and
    CPU (beyond the stream's ``cpu_s``)."""
    from olb.grid.messages import CellTask
    from olb.grid.driver.stages import grid_data_dir
    from olb.grid.running.worker import execute_cell

    wall, cpu = [], []
    for cell in plan.unique_cells[:n]:
        task = CellTask(cell.cell_id, cell.spec(grid_data_dir(cfg)), imports=tuple(cfg.imports))
        t0, cpu0 = time.perf_counter(), time.process_time()
        result = execute_cell(task)
        wall.append(time.perf_counter() - t0 - result.runtime_s)
        cpu.append(time.process_time() - cpu0 - result.cpu_s)
    return wall, cpu


def cpu_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all the machine's cores since boot (/proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def wide_node(cells: int, cpus: int, work: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    command = [
        sys.executable,
        "-m",
        "olb.grid",
        *STUB,
        f"seeds={cells}",
        "backend=ray",
        f"backend.num_cpus={cpus}",
        "+algorithm._grid_stub.params.delay_s=1.0",
        f"tracking.uri=sqlite:///{work}/wide.db",
        f"hydra.run.dir={work}/wide",
    ]
    busy0, total0 = cpu_busy()
    t0 = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    busy1, total1 = cpu_busy()
    summary = re.search(r"wall ([\d.]+) s \(start-up ([\d.]+) s, fan-out efficiency (\d+)%\)", proc.stdout)
    if proc.returncode != 0 or summary is None:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        raise SystemExit(f"the wide-node grid failed (exit {proc.returncode})")
    print(
        f"wide node: {cells} one-second cells on {cpus} Ray CPUs (machine: {os.cpu_count()} cores): ideal fan-out "
        f"{cells / cpus:.0f} s; grid wall {summary[1]} s (Ray start-up {summary[2]} s), fan-out efficiency "
        f"{summary[3]}%; the machine's cores {100 * (busy1 - busy0) / (total1 - total0):.0f}% busy over the "
        f"{wall:.0f} s (every process of the machine), load average {os.getloadavg()[0]:.1f}"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=2000)
    ap.add_argument("--tracking-uri", default=None, help="default: a fresh SQLite file")
    ap.add_argument("--resume-sizes", default="1000,10000")
    ap.add_argument("--client-cells", type=int, default=300, help="through MLflow's client; 0: skip")
    ap.add_argument("--transfer-cells", type=int, default=2000, help="0: skip (no Ray)")
    ap.add_argument("--worker-cells", type=int, default=50)
    ap.add_argument("--wide-node", action="store_true")
    ap.add_argument("--wide-cells", type=int, default=1280)
    ap.add_argument("--wide-cpus", type=int, default=32)
    args = ap.parse_args(argv)

    import olb.ops.testing  # noqa: F401 - registers _grid_stub
    from olb.grid.driver.stages import prepare

    work = Path(tempfile.mkdtemp(prefix="olb-bench-driver-"))
    try:
        uri = args.tracking_uri or f"sqlite:///{work}/mlflow.db"
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; tracking: {uri}")
        run = f"{os.getpid()}-{time.time_ns()}"  # a fresh experiment per invocation (a server may hold earlier ones)

        cfg = grid_config(args.cells, f"bench-driver-{run}", uri)
        plan, data = prepare(cfg)
        message = one_result(cfg, plan)
        d = drive(cfg, plan, data, message, work)
        n = args.cells
        print(
            f"driver: {n} cells recorded in {d['total_s']:.2f} s: {n / d['total_s']:.0f} cells/s "
            f"({d['batches']} batches, {d['untracked']} untracked); the driver's loop handed them over in "
            f"{d['fed_s']:.2f} s ({n / d['fed_s']:.0f} cells/s)"
        )
        print(
            f"  per cell: recording in the driver's loop {1e3 * d['record_s'] / n:.3f} ms, progress "
            f"{1e3 * d['progress_s'] / n:.3f} ms, the writer (its thread) {1e3 * d['write_s'] / n:.3f} ms "
            f"({1e3 * d['write_cpu_s'] / n:.3f} ms of its CPU)"
        )
        lookup_s, found = resume_lookup(cfg, plan, data, d["tracker"])
        print(
            f"  resume look-up of these {n} cells: {lookup_s:.2f} s ({1e3 * lookup_s / n:.3f} ms per cell), {found} found"
        )

        if args.client_cells:
            cfg_c = grid_config(args.client_cells, f"bench-client-{run}", uri)
            plan_c, data_c = prepare(cfg_c)
            with untested_schema():
                c = drive(cfg_c, plan_c, data_c, message, work)
                lookup_s, found = resume_lookup(cfg_c, plan_c, data_c, c["tracker"])
            n_c = args.client_cells
            print(
                f"through MLflow's client (an untested schema): {n_c} cells recorded in {c['total_s']:.2f} s: "
                f"{n_c / c['total_s']:.0f} cells/s ({c['untracked']} untracked), the writer "
                f"{1e3 * c['write_s'] / n_c:.3f} ms per cell ({1e3 * c['write_cpu_s'] / n_c:.3f} ms of its CPU); "
                f"resume look-up {lookup_s:.2f} s, {found} found"
            )

        sizes = [int(s) for s in args.resume_sizes.split(",") if s]
        previous = None
        for size in sizes:
            cfg_n = grid_config(size, f"bench-resume-{size}-{run}", uri)
            plan_n, data_n = prepare(cfg_n)
            stored = drive(cfg_n, plan_n, data_n, message, work)
            lookup_s, found = resume_lookup(cfg_n, plan_n, data_n, stored["tracker"])
            growth = f", x{lookup_s / previous[1]:.1f} for x{size / previous[0]:.0f} cells" if previous else ""
            print(
                f"resume look-up, {size} finished cells in the store: {lookup_s:.2f} s "
                f"({1e6 * lookup_s / size:.0f} us per cell, {found} found{growth}); writing them took "
                f"{stored['total_s']:.1f} s"
            )
            previous = (size, lookup_s)

        if args.transfer_cells:
            per = transfer(message, args.transfer_cells)
            print(f"result transfer from Ray: {1e3 * per:.3f} ms per cell ({args.transfer_cells} results)")
        if args.worker_cells:
            wall, cpu = worker_overhead(cfg, plan, args.worker_cells)
            print(
                f"worker-side overhead outside the learner's stream: median {1e3 * statistics.median(wall):.1f} ms "
                f"wall, {1e3 * statistics.median(cpu):.1f} ms CPU; first cell {1e3 * wall[0]:.0f} ms (imports); "
                f"{len(wall)} cells"
            )
        if args.wide_node:
            wide_node(args.wide_cells, args.wide_cpus, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the stores it wrote
    return 0


if __name__ == "__main__":
    sys.exit(main())
