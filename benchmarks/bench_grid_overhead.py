"""Grid overhead, serial against Ray, for a small and a large grid, and what ``backend=auto`` chooses.

    python benchmarks/bench_grid_overhead.py [--repeats 1]

Each grid runs as a whole ``python -m olb.grid`` process (imports, planning, data checks, backend start-up,
fan-out, tables; tracking off, plots off) with ``backend=serial``, ``backend=ray`` and ``backend=auto``; the
wall time of the whole process is printed (median over ``--repeats``), with the sum of the cells' own stream
times, so the overhead is the difference.

- small: the default grid (`make demo`: 9 cells of 10 trees on emotions);
- large: paper 000's Table 3 setting on emotions with 10 seeds (50 cells of 100 trees).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

GRIDS = {
    "small (default grid, 9 cells)": [],
    "large (table3 on emotions, 50 cells)": ["+experiment=table3", "datasets=[emotions]", "seeds=10"],
}


def run(overrides: list[str], backend: str, workdir: Path) -> tuple[float, float, str]:
    """Wall seconds of the whole grid process, the cells' summed runtime, and the backend it used."""
    out = workdir / f"out-{backend}-{time.monotonic_ns()}"
    command = [
        sys.executable,
        "-m",
        "olb.grid",
        *overrides,
        f"backend={backend}",
        "tracking=off",
        "plots=false",
        f"hydra.run.dir={out}",
    ]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=workdir, env=os.environ.copy())
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bench_grid_overhead: {' '.join(command)} failed:\n{done.stderr[-2000:]}")
    cells = pd.read_csv(out / "cells.csv")
    used = next(
        (line.split("backend ")[1].split(":")[0] for line in done.stdout.splitlines() if "olb.grid: backend " in line),
        backend,
    )
    return wall, float(cells["runtime_s"].sum()), used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="olb-overhead-") as tmp:
        for name, overrides in GRIDS.items():
            for backend in ("serial", "ray", "auto"):
                results = [run(overrides, backend, Path(tmp)) for _ in range(args.repeats)]
                wall = statistics.median(r[0] for r in results)
                busy = statistics.median(r[1] for r in results)
                rows.append(
                    {
                        "grid": name,
                        "backend": backend,
                        "used": results[0][2],
                        "wall_s": round(wall, 1),
                        "cells_s": round(busy, 1),
                        "overhead_s": round(wall - busy / (1 if results[0][2] == "serial" else os.cpu_count()), 1),
                    }
                )
                print(rows[-1], flush=True)
    print()
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
