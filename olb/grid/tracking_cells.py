"""What a cell's MLflow child run holds, from the cell and the worker's message: its parameters, metrics (final,
timings, phases, the learning curve), tags and files (:meth:`olb.grid.tracking.MlflowTracker.log_cell`)."""

from __future__ import annotations

from olb.grid.messages import CellFailure, CellResult
from olb.grid.plan import Cell
from olb.grid.worker import curve_csv


def cell_tags(cell: Cell, message: CellResult | CellFailure, data_tags: dict | None, run_tags: dict) -> dict:
    """The cell's tags: ``run_tags`` (experiment, code version, parent run), what it is, where it ran, which data
    it read (``data_tags``) and, for a failure, its error."""
    tags = {
        "mlflow.runName": cell.run_name,
        "olb.kind": "cell",
        "olb.cell_id": cell.cell_id,
        **run_tags,
        "olb.entry": cell.entry,
        "olb.label": cell.label,
        "olb.host": message.host,
        "olb.node_ip": message.node_ip,
        "olb.status": message.status,
        **(data_tags or {}),
    }
    if isinstance(message, CellFailure):
        tags["olb.error"] = message.error
    return tags


def cell_files(message: CellResult | CellFailure, artifacts: bool) -> dict[str, bytes]:
    """The cell's artifacts: its curve (CSV, and the worker's plot) when finished and ``artifacts``, else its
    traceback."""
    if isinstance(message, CellFailure):
        return {"traceback.txt": message.traceback.encode()}
    files = {}
    if artifacts:
        files["curve.csv"] = curve_csv(message).encode()
        if message.curve_png:
            files["curve.png"] = message.curve_png
    return files


def cell_params(cell: Cell) -> dict:
    """A cell's run parameters: what decides its result; a hyperparameter named like one of them gets ``param.``."""
    params = {
        "algorithm": cell.algorithm,
        "dataset": cell.dataset,
        "seed": cell.seed,
        "protocol": cell.protocol,
        "loops": cell.loops,
        "metrics": ",".join(cell.metrics),
        "curve_every": cell.curve_every,
        "label": cell.label,
        "cell_id": cell.cell_id,
    }
    for key, value in cell.params.items():
        params[key if key not in params else f"param.{key}"] = value
    return params


def cell_metrics(message: CellResult | CellFailure, end_ms: int) -> list:
    """A finished cell's metrics, timings, phase timings and curve (one point per step); a failed one's wall time."""
    from mlflow.entities import Metric

    if isinstance(message, CellFailure):
        return [Metric("wall_s", float(message.wall_s), end_ms, 0)]
    metrics = [Metric(key, float(value), end_ms, 0) for key, value in message.metrics.items()]
    for key in ("runtime_s", "cpu_s", "compile_s", "train_us_per_example", "wall_s", "setup_s", "peak_rss_mb"):
        metrics.append(Metric(key, float(getattr(message, key)), end_ms, 0))
    for phase, timing in message.phases.items():
        for key, value in timing.items():
            metrics.append(Metric(f"phase/{phase}/{key}", float(value), end_ms, 0))
    curve, name = message.curve, f"curve/{message.primary_metric}"
    metrics.extend(Metric(name, float(v), end_ms, int(s)) for s, v in zip(curve["step"], curve["value"]))
    return metrics
