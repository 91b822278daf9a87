"""Helpers of slurm/olb_grid.sbatch (run with the project's python; no Slurm needed to run them).

python slurm/cluster_tools.py check [GRID OVERRIDES ...]
    Compose and plan the grid exactly as ``python -m olb.grid`` would (Hydra's own errors for an unknown
    experiment or key; the grid's for unknown algorithms, bad hyperparameters and unavailable data sets),
    without running anything. Prints KEY=VALUE lines for the batch script; exit 2 with the reason otherwise.

python slurm/cluster_tools.py cpus NODELIST_CPUS NUM_NODES
    Expand Slurm's per-node CPU list (SLURM_JOB_CPUS_PER_NODE, e.g. ``16(x2),8``) to one number per line.

python slurm/cluster_tools.py wait --address IP:PORT --nodes N [--cpus C] [--timeout S] [--watch PID=LABEL ...]
    Wait until N Ray nodes (and C CPUs) are alive in the cluster at ADDRESS. Fails at once, naming the node,
    when a watched process (the ``srun`` that runs a node) exits, and after S seconds with the nodes that
    did join: never hangs.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time

from olb.grid.recording.tracking import pid_alive

PROG = "olb-slurm"


def fail(message: str, code: int = 2) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(code)


# -- check --------------------------------------------------------------------------------------------------
def check(overrides: list[str]) -> int:
    grid_overrides = [o for o in overrides if not o.lstrip("+~").startswith("hydra.") and not o.startswith("--")]
    for o in grid_overrides:
        if o.lstrip("+~").split("=", 1)[0] == "backend.address":
            fail("do not set backend.address: the batch script connects the grid to the Ray cluster it starts")
    try:
        from olb.grid import GridConfigError, compose
        from olb.grid.driver.stages import prepare
    except ImportError as err:
        fail(
            f"{sys.executable} cannot import olb's grid ({err}); set OLB_PYTHON to the project's virtual "
            "environment (make setup creates .venv) or OLB_VENV to its directory"
        )
    try:
        cfg = compose(grid_overrides)
    except Exception as err:  # noqa: BLE001 - Hydra's composition errors, shown as they are
        fail(f"the grid's configuration does not compose: {type(err).__name__}: {err}")
    if cfg.backend.name == "serial":
        fail(
            "backend=serial runs every cell in the driver; on a cluster use the default backend (auto: the "
            "batch script gives it the cluster's address, so it runs on Ray)"
        )
    try:
        plan, _ = prepare(cfg)  # the configuration and the data (present, verified, parsed), every problem at once
    except GridConfigError as err:
        fail(
            f"invalid grid: {err} (set OLB_DATA_DIR or data_dir=... for missing data, or add "
            "allow_unavailable=true to run the rest)"
        )
    uri = "off"
    if cfg.tracking.enabled:
        # olb.grid.recording.tracking.resolve_uri without importing MLflow (seconds): MLflow's default is ./mlflow.db
        uri = cfg.tracking.uri or os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///mlflow.db"
        match = re.match(r"sqlite:///(?!/)(.*)$", uri)
        if match:  # relative to the working directory: say where it really is
            uri = "sqlite:///" + os.path.abspath(match.group(1))
    print(f"name={cfg.name}")
    print(f"cells={len(plan.unique_cells)}")
    print(f"datasets={','.join(plan.datasets)}")
    print(f"tracking={uri}")
    print(f"resume={str(bool(cfg.resume)).lower()}")
    print(f"max_retries={int(cfg.backend.max_retries)}")
    return 0


# -- cpus ---------------------------------------------------------------------------------------------------
def expand_cpus(spec: str, nodes: int) -> list[int]:
    """``16(x2),8`` -> [16, 16, 8]; Slurm's SLURM_JOB_CPUS_PER_NODE format."""
    out: list[int] = []
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if not m:
            fail(f"cannot read the CPU list {spec!r}")
        out += [int(m.group(1))] * int(m.group(2) or 1)
    if len(out) != nodes:
        fail(f"the CPU list {spec!r} names {len(out)} node(s), the allocation has {nodes}")
    return out

    # -- wait ---------------------------------------------------------------------------------------------------
    return True


def wait(address: str, nodes: int, cpus: float | None, timeout: float, watch: list[str]) -> int:
    watched = {}
    for item in watch:
        pid, _, label = item.partition("=")
        watched[int(pid)] = label or pid
    deadline = time.monotonic() + timeout
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "token")  # the token: RAY_AUTH_TOKEN_PATH, as the batch script sets it
    os.environ.pop("RAY_ADDRESS", None)

    def check_watched():
        for pid, label in watched.items():
            if not pid_alive(pid):
                fail(f"Ray on {label} exited before the cluster was complete; see its log", 3)

    import logging

    import ray

    connected = False
    last_error = None
    joined: list[dict] = []
    while time.monotonic() < deadline:
        check_watched()
        if not connected:
            try:
                ray.init(
                    address=address,
                    logging_level=logging.ERROR,
                    log_to_driver=False,
                    include_dashboard=False,
                    configure_logging=True,
                )
                connected = True
            except Exception as err:  # noqa: BLE001 - the head is not up yet
                last_error = err
                time.sleep(1.0)
                continue
        joined = [n for n in ray.nodes() if n.get("Alive")]
        total = sum(n.get("Resources", {}).get("CPU", 0) for n in joined)
        if len(joined) >= nodes and (cpus is None or total >= cpus):
            names = ", ".join(f"{n['NodeManagerAddress']} ({int(n['Resources'].get('CPU', 0))} CPUs)" for n in joined)
            print(f"{PROG}: all {len(joined)} Ray node(s) joined, {total:g} CPUs: {names}", flush=True)
            ray.shutdown()
            return 0
        time.sleep(1.0)
    names = ", ".join(n["NodeManagerAddress"] for n in joined) or "none"
    if not connected:
        fail(f"timed out after {timeout:g} s: the Ray head at {address} did not answer ({last_error})", 4)
    fail(
        f"timed out after {timeout:g} s: {len(joined)} of {nodes} Ray node(s) joined (joined: {names}); "
        "see the ray-*.log files of the nodes that are missing",
        4,
    )
    return 4


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "check":
        return check(rest)
    if cmd == "cpus":
        if len(rest) != 2:
            fail("usage: cluster_tools.py cpus NODELIST_CPUS NUM_NODES")
        print("\n".join(str(c) for c in expand_cpus(rest[0], int(rest[1]))))
        return 0
    if cmd == "wait":
        p = argparse.ArgumentParser(prog="cluster_tools.py wait")
        p.add_argument("--address", required=True)
        p.add_argument("--nodes", type=int, required=True)
        p.add_argument("--cpus", type=float)
        p.add_argument("--timeout", type=float, default=300.0)
        p.add_argument("--watch", action="append", default=[])
        a = p.parse_args(rest)
        return wait(a.address, a.nodes, a.cpus, a.timeout, a.watch)
    fail(f"unknown command {cmd!r} (check, cpus, wait)")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
