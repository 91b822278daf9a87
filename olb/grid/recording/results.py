"""Cell results: the outcome of each cell (from a worker's payload or a tracked run) and ``cells.csv``.

The paper-style table is the reporting stage's (table.py, markdown.py in olb/grid/reporting/).
"""

from __future__ import annotations

import math

import pandas as pd

from olb.grid.datacheck import DataCheck
from olb.grid.messages import CellFailure, CellOutcome, CellResult, Status
from olb.grid.planning.plan import RUNTIME_COLUMNS, Cell, Plan
from olb.grid.recording.tracker import FinishedRun

NOT_RUN = CellOutcome(status=Status.NOT_RUN)


def outcome_from_message(message: CellResult | CellFailure, run_id: str | None) -> CellOutcome:
    """A cell run in this invocation, from what its worker (or backend) answered."""
    runtimes = {}
    for key in (*RUNTIME_COLUMNS, "wall_s"):
        value = getattr(message, key, None)  # a failure has no runtime, and memory figures only when killed for it
        runtimes[key] = math.nan if value is None else value
    if isinstance(message, CellResult):
        return CellOutcome(
            status=message.status,
            source="run",
            metrics=dict(message.metrics),
            runtimes=runtimes,
            run_id=run_id,
            curve=message.curve,
            primary_metric=message.primary_metric,
            host=message.host,
            node_ip=message.node_ip,
        )
    return CellOutcome(
        status=message.status,
        source="run",
        error=message.error,
        runtimes=runtimes,
        run_id=run_id,
        host=message.host,
        node_ip=message.node_ip,
    )


def outcome_from_run(run: FinishedRun, cell: Cell) -> CellOutcome:
    """A cell finished by an earlier invocation, from its MLflow run."""
    return CellOutcome(
        status=Status.FINISHED,
        source="resumed",
        metrics={m: run.metrics.get(m, math.nan) for m in cell.measured},
        runtimes={key: run.metrics.get(key, math.nan) for key in (*RUNTIME_COLUMNS, "wall_s")},
        run_id=run.run_id,
        primary_metric=cell.metrics[0],
        host=run.tags.get("olb.host", ""),
        node_ip=run.tags.get("olb.node_ip", ""),
    )


def cells_frame(plan: Plan, outcomes: dict[str, CellOutcome], data: DataCheck | None = None) -> pd.DataFrame:
    """One row per cell: id, algorithm, data set, every hyperparameter, seed, status, runtime, metrics, the data
    fingerprint (``data``: the grid's DataCheck), where it ran."""
    sources = data.sources if data is not None else {}
    metric_names = list(dict.fromkeys(m for c in plan.cells for m in c.measured))
    rows = []
    for cell in plan.cells:
        row = cell.record()
        out = outcomes.get(cell.cell_id, NOT_RUN)
        row["status"] = out.status
        for key in RUNTIME_COLUMNS:
            row[key] = out.runtimes.get(key, math.nan)
        for m in metric_names:
            row[m] = out.metrics.get(m, math.nan)
        row["host"], row["node_ip"] = out.host, out.node_ip
        row["data_fingerprint"] = sources[cell.dataset].fingerprint if cell.dataset in sources else ""
        row["run_id"] = out.run_id or ""
        row["source"] = out.source
        row["error"] = out.error.splitlines()[0][:300] if out.error else ""
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
