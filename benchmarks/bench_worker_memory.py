"""What Ray workers keep between cells, and what bounding it costs: a memory-heavy cell, then small cells, on a
private local Ray.

    python benchmarks/bench_worker_memory.py --mode keep      # workers keep what they hold (worker_memory_mb=0)
    python benchmarks/bench_worker_memory.py --mode trim      # freed heap returned after each cell, no worker ends
    python benchmarks/bench_worker_memory.py --mode recycle   # the default: trim, and end a worker above the bound
    python benchmarks/bench_worker_memory.py --mode fresh     # fresh_worker_per_cell=true
    python benchmarks/bench_worker_memory.py --mode keep --big none --small 20   # overhead: small cells only

Runs ``--big`` cells first (``algorithm:dataset:key=value,...``; default OnlineMBBM at 100 trees and gamma 0.01 on
nursery, the boosters' calibration cell that left its worker holding the most), then ``--small`` cells (Ada.OLMR,
10 trees on emotions, one seed each), through the grid's Ray backend (``backend.num_cpus`` CPUs), and prints each
cell in the order it finished: the worker's PID, its predicted and measured peak memory (``peak_rss_mb``), and
whether its worker had run a big cell before it. Then: the small cells' largest peak, on workers that had run a big
cell and on the others; how many worker processes ran cells; the resident memory of the workers still alive at
the end; and the wall seconds of the cells (Ray's start-up excluded). The data sets are read from
``$OLB_DATA_DIR``.
"""

from __future__ import annotations

import argparse
import os
import time

from olb.grid.running.backend import HEARTBEAT
from olb.grid.running.backends import LocalRayBackend
from olb.grid.planning.config import BackendConfig
from olb.grid.planning.cost import planned_memory_mb
from olb.grid.messages import CellResult, CellTask
from olb.learners.registry import get_algorithm
from olb.run import CellSpec

BIG = "onlinembbm:nursery:num_learners=100,gamma=0.01,authors_weights=true"
SMALL = "adaolmr:emotions:num_learners=10"
MODES = {
    "keep": {"worker_memory_mb": 0},
    "trim": {"worker_memory_mb": 10**6},  # freed heap returned after each cell, no worker ends
    "recycle": {},
    "fresh": {"fresh_worker_per_cell": True},
}


def task(cell: str, seed: int, name: str) -> CellTask:
    """A cell from ``algorithm:dataset:key=value,...`` (values as in YAML: numbers, true/false)."""
    algorithm, dataset, *rest = cell.split(":")
    raw = dict(item.split("=") for item in ",".join(rest).split(",") if item)
    params = get_algorithm(algorithm).validate({k: _value(v) for k, v in raw.items()})
    spec = CellSpec(algorithm, dataset, seed=seed, params=params, data_dir=os.environ.get("OLB_DATA_DIR"))
    memory = planned_memory_mb(algorithm, params, dataset)
    return CellTask(cell_id=name, spec=spec, predicted_memory_mb=memory)


def _value(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def resident_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=MODES, default="recycle")
    parser.add_argument("--big", nargs="*", default=[BIG], help="memory-heavy cells run first ('none': no big cell)")
    parser.add_argument("--small", type=int, default=20, help="small cells after them")
    parser.add_argument("--small-cell", default=SMALL)
    parser.add_argument("--cpus", type=int, default=2)
    args = parser.parse_args()
    big = [cell for cell in args.big if cell != "none"]
    tasks = [task(cell, i, f"big{i}") for i, cell in enumerate(big)]
    tasks += [task(args.small_cell, seed, f"small{seed}") for seed in range(args.small)]
    backend = LocalRayBackend(
        BackendConfig(num_cpus=args.cpus, temp_dir="/tmp/olbw-{pid}", **MODES[args.mode])  # type: ignore[arg-type]
    )
    backend.start()
    try:
        t0 = time.perf_counter()
        results = [m for m in backend.run(tasks) if m is not HEARTBEAT]
        wall = time.perf_counter() - t0
        time.sleep(2)  # a worker that ends after its cell has done so
        alive = {m.pid: resident_mb(m.pid) for m in results}
    finally:
        backend.stop()
    predicted = {t.cell_id: t.predicted_memory_mb for t in tasks}
    print(f"mode={args.mode} (worker_memory_mb={backend.worker_memory_mb:g}), {args.cpus} CPUs")
    print(f"{'cell':>8} {'pid':>8} {'predicted_mb':>12} {'peak_rss_mb':>11}  after a big cell on its worker")
    big_workers: set[int] = set()
    after, clean = [], []
    for m in sorted(results, key=lambda m: m.end_time):
        if not isinstance(m, CellResult):
            print(f"{m.cell_id:>8} {m.pid:>8} failed: {m.error}")
            continue
        peak = m.peak_rss_mb
        inherited = m.pid in big_workers
        print(f"{m.cell_id:>8} {m.pid:>8} {predicted[m.cell_id]:12.0f} {peak:11.0f}  {'yes' if inherited else ''}")
        if m.cell_id.startswith("big"):
            big_workers.add(m.pid)
        else:
            (after if inherited else clean).append(peak)
    fmt = lambda xs: f"{max(xs):.0f} MB over {len(xs)} cell(s)" if xs else "no cell"  # noqa: E731
    print(f"small cells' largest peak: after a big cell on their worker {fmt(after)}; otherwise {fmt(clean)}")
    print(f"worker processes that ran cells: {len(alive)}")
    held = ", ".join(f"{pid}: {mb:.0f} MB" if mb is not None else f"{pid}: ended" for pid, mb in alive.items())
    print(f"resident at the end: {held}")
    print(f"cells' wall time: {wall:.2f} s ({len(tasks)} cells)")


if __name__ == "__main__":
    main()
