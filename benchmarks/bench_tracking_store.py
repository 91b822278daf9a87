"""The driver's recording cost per cell, on a SQLite file and on an MLflow server backed by PostgreSQL.

    python benchmarks/bench_tracking_store.py [--cells 300] [--tracking-uri URI ...]

Runs one serial grid of ``--cells`` stub cells (``_grid_stub`` of ``olb.grid.testing`` on emotions, one cell per
seed, curve artifacts on, plots off) in this process against each store, then the same grid again (every cell
resumed), and prints per store: the time the driver spends recording one cell (``log_cell``: the run, its
parameters, metrics and curve, its artifacts, its status; mean and median), the cells/s that alone allows, the
whole grid's cells/s, and the second invocation's wall time (resume look-up included).

Without ``--tracking-uri`` the stores are a fresh SQLite file and a fresh PostgreSQL-backed MLflow server
(``python -m olb.grid.serve``, stopped at the end). A server named with ``--tracking-uri`` takes its
credentials from MLflow's usual places (``MLFLOW_TRACKING_USERNAME``/``MLFLOW_TRACKING_PASSWORD``,
``~/.mlflow/credentials``) or ``--credentials FILE``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from olb.grid import compose, run_grid
from olb.grid.serve import TrackingService
from olb.grid.tracking import MlflowTracker


def measure(uri: str, cells: int, workdir: Path, credentials: str | None) -> dict[str, float]:
    """Per-cell recording times and wall times of one grid on ``uri`` and of its resumed second invocation."""
    timings: list[float] = []
    log_cell = MlflowTracker.log_cell

    def timed(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return log_cell(self, *args, **kwargs)
        finally:
            timings.append(time.perf_counter() - start)

    overrides = [
        "backend=serial",
        f"seeds={cells}",
        "datasets=[emotions]",
        "imports=[olb.grid.testing]",
        "algorithms=[_grid_stub]",
        "plots=false",
        f"name=bench_store_{uuid.uuid4().hex[:8]}",
        f"tracking.uri={uri}",
    ]
    if credentials:
        overrides.append(f"tracking.credentials={credentials}")
    MlflowTracker.log_cell = timed  # type: ignore[method-assign]
    try:
        start = time.perf_counter()
        first = run_grid(compose(overrides), workdir / "first")
        wall = time.perf_counter() - start
        start = time.perf_counter()
        second = run_grid(compose(overrides), workdir / "second")
        resumed_wall = time.perf_counter() - start
    finally:
        MlflowTracker.log_cell = log_cell  # type: ignore[method-assign]
    if first.exit_code or second.exit_code or len(timings) != cells:
        raise SystemExit(f"bench_tracking_store: the grid on {uri} did not record {cells} cells")
    mean = statistics.fmean(timings)
    return {
        "record_ms_mean": 1000 * mean,
        "record_ms_median": 1000 * statistics.median(timings),
        "record_cells_per_s": 1 / mean,
        "grid_cells_per_s": cells / wall,
        "resumed_wall_s": resumed_wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=300)
    parser.add_argument("--tracking-uri", action="append", help="a store to measure (repeatable)")
    parser.add_argument("--credentials", help="MLflow credentials file for --tracking-uri servers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="olb-bench-store-") as tmp:
        work = Path(tmp)
        work.chmod(0o711)  # PostgreSQL's user (under root) passes through to the server's folder
        stores = [(uri, args.credentials) for uri in args.tracking_uri or []]
        service = None
        if not stores:
            service = TrackingService(work / "server")
            state = service.start()
            stores = [(f"sqlite:///{work / 'mlflow.db'}", None), (state.uri, str(service.credentials))]
        try:
            print(f"{args.cells} stub cells per grid, serial")
            print("store | record ms/cell (mean, median) | cells/s recording alone | grid cells/s | resumed grid s")
            for i, (uri, credentials) in enumerate(stores):
                m = measure(uri, args.cells, work / f"run{i}", credentials)
                kind = "PostgreSQL server" if service and uri.startswith("http") else uri.split(":")[0]
                print(
                    f"{kind} ({uri}) | {m['record_ms_mean']:.1f}, {m['record_ms_median']:.1f} | "
                    f"{m['record_cells_per_s']:.1f} | {m['grid_cells_per_s']:.1f} | {m['resumed_wall_s']:.1f}"
                )
        finally:
            if service:
                service.stop()


if __name__ == "__main__":
    main()
