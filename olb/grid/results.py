"""Cell results: the outcome of each cell (from a worker's payload or a tracked run) and ``cells.csv``.

The paper-style table is built in :mod:`olb.grid.table` and written as markdown by :mod:`olb.grid.markdown`.
"""

from __future__ import annotations

import math

import pandas as pd

from olb.grid.messages import CellFailure, CellResult, Status
from olb.grid.plan import RUNTIME_COLUMNS, Cell, Plan


def outcome_from_message(message: CellResult | CellFailure, run_id: str | None) -> dict:
    """A cell run in this invocation, from what its worker (or backend) answered."""
    finished = isinstance(message, CellResult)
    out = {
        "status": message.status,
        "run_id": run_id,
        "source": "run",
        "error": "" if finished else message.error,
        "metrics": dict(message.metrics) if finished else {},
        "curve": message.curve if finished else None,
        "primary_metric": message.primary_metric if finished else None,
        "host": message.host,
        "node_ip": message.node_ip,
    }
    for key in (*RUNTIME_COLUMNS, "wall_s"):
        value = getattr(message, key, None)  # a failure has no runtime, and memory figures only when killed for it
        out[key] = math.nan if value is None else value
    return out


def outcome_from_run(run, cell: Cell) -> dict:
    """A cell finished by an earlier invocation, from its MLflow run."""
    out = {
        "status": Status.FINISHED,
        "run_id": run.run_id,
        "source": "resumed",
        "error": "",
        "metrics": {m: run.metrics.get(m, math.nan) for m in cell.measured},
        "curve": None,
        "primary_metric": cell.metrics[0],
        "host": run.tags.get("olb.host", ""),
        "node_ip": run.tags.get("olb.node_ip", ""),
    }
    for key in (*RUNTIME_COLUMNS, "wall_s"):
        out[key] = run.metrics.get(key, math.nan)
    return out


def cells_frame(plan: Plan, outcomes: dict[str, dict], data=None) -> pd.DataFrame:
    """One row per cell: id, algorithm, data set, every hyperparameter, seed, status, runtime, metrics, the data
    fingerprint (``data``: the grid's DataCheck), where it ran."""
    sources = data.sources if data is not None else {}
    metric_names = list(dict.fromkeys(m for c in plan.cells for m in c.measured))
    rows = []
    for cell in plan.cells:
        row = cell.record()
        out = outcomes.get(cell.cell_id, {"status": Status.NOT_RUN, "error": "", "metrics": {}})
        row["status"] = out["status"]
        for key in RUNTIME_COLUMNS:
            row[key] = out.get(key, math.nan)
        for m in metric_names:
            row[m] = out.get("metrics", {}).get(m, math.nan)
        row["host"], row["node_ip"] = out.get("host", ""), out.get("node_ip", "")
        row["data_fingerprint"] = sources[cell.dataset].fingerprint if cell.dataset in sources else ""
        row["run_id"] = out.get("run_id") or ""
        row["source"] = out.get("source", "")
        row["error"] = (out.get("error") or "").splitlines()[0][:300] if out.get("error") else ""
        rows.append(row)
    df = pd.DataFrame(rows)
    fixed = ["cell_id", "label", "algorithm", "dataset"]
    tail = [
        "loops",
        "protocol",
        "seed",
        "status",
        *RUNTIME_COLUMNS,
        *metric_names,
        "data_fingerprint",
        "host",
        "node_ip",
        "run_id",
        "source",
        "error",
    ]
    hp = [c for c in df.columns if c not in fixed and c not in tail]
    return df[fixed + hp + tail]
