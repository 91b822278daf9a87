"""What a cell's MLflow child run holds, from the cell and the worker's message: its parameters, metrics (final,
timings, phases, the learning curve of each phase as the metric history ``curve/<phase>/<metric>``, and with a
window W its windowed curve ``curve/<phase>/<metric>_last<W>``), tags and files, gathered in one :class:`CellRecord`
that a tracker writes as it can (:meth:`olb.grid.recording.tracking.MlflowTracker.log_cells`)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from olb.grid.datacheck import FILES_TAG, FINGERPRINT_TAG
from olb.grid.messages import CellFailure, CellResult, Status
from olb.grid.planning.plan import Cell
from olb.grid.recording.tracker import Tags

MAX_PARAM = 6000
MAX_TAG = 8000


@dataclass(frozen=True)
class DatasetRecord:
    """The data a cell's run read, as an MLflow dataset input (the runs table's Dataset column): the data set's
    registry ``name``, olb's data fingerprint as ``digest``, its files' folder as a ``local`` ``source`` (MLflow's
    JSON) and the protocol it was read under as ``context``."""

    name: str
    digest: str
    source_type: str
    source: str
    context: str


@dataclass(frozen=True)
class CellRecord:
    """One cell's child run as written: its status is the run's (FINISHED or FAILED), ``tags`` include
    ``olb.status``; ``metrics`` are ``(key, value, timestamp_ms, step)``; ``files`` its artifacts."""

    cell_id: str
    run_name: str
    status: str
    start_ms: int
    end_ms: int
    tags: dict[str, str]
    params: dict[str, str]
    metrics: list[tuple[str, float, int, int]]
    files: dict[str, bytes]
    dataset: DatasetRecord | None = None


def cell_record(
    cell: Cell, message: CellResult | CellFailure, data_tags: Tags | None, run_tags: Tags, artifacts: bool
) -> CellRecord:
    """Everything one cell's run holds; ``artifacts``: its curve as CSV (and the worker's PNG) besides the metric
    history."""
    end_ms = int(message.end_time * 1000)
    params = cell_params(cell)
    if isinstance(message, CellResult):
        params["phases"] = ",".join(message.phases)
    return CellRecord(
        cell_id=cell.cell_id,
        run_name=cell.run_name,
        status=Status.FINISHED if message.status == Status.FINISHED else Status.FAILED,
        start_ms=int(message.start_time * 1000),
        end_ms=end_ms,
        tags={k: clip(str(v), MAX_TAG) for k, v in cell_tags(cell, message, data_tags, run_tags).items()},
        params={str(k): clip(str(v), MAX_PARAM) for k, v in params.items()},
        metrics=cell_metrics(message, end_ms, cell.window),
        files=cell_files(message, artifacts),
        dataset=cell_dataset(cell, data_tags),
    )


def cell_dataset(cell: Cell, data_tags: Tags | None) -> DatasetRecord | None:
    """The data set input of a cell that read the data ``data_tags`` name (None when they name none)."""
    if not data_tags or FINGERPRINT_TAG not in data_tags:
        return None
    # the files tag: "role=path" per file (olb.data.Provenance.files_text), a path possibly with spaces in it
    paths = re.findall(r"(?:^| )\w+=(.+?)(?= \w+=|$)", data_tags.get(FILES_TAG, ""))
    folder = os.path.commonpath(paths) if len(paths) > 1 else (paths[0] if paths else cell.dataset)
    source = json.dumps({"uri": folder})
    return DatasetRecord(cell.dataset, data_tags[FINGERPRINT_TAG], "local", source, cell.protocol)


def clip(text: str, limit: int) -> str:
    """``text`` cut to its last ``limit`` characters (MLflow's limits on a tag's or parameter's value)."""
    return text if len(text) <= limit else "..." + text[-(limit - 3) :]


def curve_csv(result: CellResult) -> str:
    """The learning curve as CSV text: step, phase, value (and the windowed value, when there is one)."""
    curve = result.curve
    phases = list(result.phases)
    windowed = "window" in curve
    lines = [f"step,phase,{result.primary_metric}" + (f",{result.primary_metric}_window" if windowed else "")]
    for i, (step, phase, value) in enumerate(zip(curve["step"], curve["phase"], curve["value"])):
        line = f"{int(step)},{phases[int(phase)] if int(phase) < len(phases) else phase},{float(value)!r}"
        lines.append(line + (f",{float(curve['window'][i])!r}" if windowed else ""))
    return "\n".join(lines) + "\n"


def cell_tags(cell: Cell, message: CellResult | CellFailure, data_tags: Tags | None, run_tags: Tags) -> Tags:
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


def cell_params(cell: Cell) -> dict[str, object]:
    """A cell's run parameters: what decides its result; a hyperparameter named like one of them gets ``param.``."""
    params: dict[str, object] = {
        "algorithm": cell.algorithm,
        "dataset": cell.dataset,
        "seed": cell.seed,
        "protocol": cell.protocol,
        "loops": cell.loops,
        "metrics": ",".join(cell.metrics),
        "curve_every": cell.curve_every,
        **({"window": cell.window} if cell.window else {}),
        "label": cell.label,
        "cell_id": cell.cell_id,
    }
    for key, value in cell.params.items():
        params[key if key not in params else f"param.{key}"] = value
    return params


def cell_metrics(message: CellResult | CellFailure, end_ms: int, window: int = 0) -> list[tuple[str, float, int, int]]:
    """A finished cell's metrics, timings, phase timings and curves (one point per step, each phase under its own
    key: :func:`curve_key`); a failed one's wall time. Each as ``(key, value, timestamp_ms, step)``."""
    if isinstance(message, CellFailure):
        return [("wall_s", float(message.wall_s), end_ms, 0)]
    metrics = [(key, float(value), end_ms, 0) for key, value in message.metrics.items()]
    for key in ("runtime_s", "cpu_s", "compile_s", "train_us_per_example", "wall_s", "setup_s", "peak_rss_mb"):
        metrics.append((key, float(getattr(message, key)), end_ms, 0))
    for phase, timing in message.phases.items():
        for key, value in timing.items():
            metrics.append((f"phase/{phase}/{key}", float(value), end_ms, 0))
    curve, phases = message.curve, list(message.phases)
    keys = [curve_key(phases[int(p)], message.primary_metric) for p in curve["phase"]]
    metrics.extend((key, float(v), end_ms, int(s)) for key, s, v in zip(keys, curve["step"], curve["value"]))
    if "window" in curve:
        suffix = f"_last{window}"
        metrics.extend(
            (key + suffix, float(v), end_ms, int(s)) for key, s, v in zip(keys, curve["step"], curve["window"])
        )
    return metrics


def curve_key(phase: str, metric: str) -> str:
    """The metric history of one phase's learning curve: ``curve/<phase>/<metric>`` (``curve/test/rank_loss``), so
    that each phase is its own chart and a curve never runs on across the end of training."""
    return f"curve/{phase}/{metric}"
