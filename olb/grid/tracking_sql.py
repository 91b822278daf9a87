"""Cells' runs written and read in bulk straight through MLflow's SQLAlchemy store (a SQLite file, or a database
URI such as ``postgresql://``), in the tables MLflow's own calls fill.

MLflow's client writes a run in three to four transactions (create, log, artifacts, terminate), each opening a
session and reading the run back: ~50 ms per cell on SQLite. :func:`insert_runs` writes a whole batch of cells,
each already FINISHED (or FAILED) with all its tags, parameters, metrics and metric history, in one transaction:
a batch is in the store entirely or not at all, so a driver killed while writing leaves no half-written run
(its cells run again on resume). :func:`finished_runs` reads the resume index (every finished run of a kind with
its tags, parameters and latest metrics) in three queries, whatever the number of runs, instead of MLflow's
search, which builds one entity per run.
"""

from __future__ import annotations

import math
import uuid
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from olb.grid.tracker import FinishedRun

if TYPE_CHECKING:
    from olb.grid.tracking_cells import CellRecord

SQL_FLOAT_MAX = 1.7976931348623157e308  # what MLflow stores for an infinite metric


def sql_store(client):
    """The SQLAlchemy store behind an MLflow client, or None (a REST or file store)."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    store = client._tracking_client.store
    return store if isinstance(store, SqlAlchemyStore) else None


def _metric_value(value: float) -> tuple[float, bool]:
    """A metric's stored value and whether it is NaN (MLflow's encoding: NaN as 0, infinities clipped)."""
    if math.isnan(value):
        return 0.0, True
    if math.isinf(value):
        return (SQL_FLOAT_MAX if value > 0 else -SQL_FLOAT_MAX), False
    return value, False


def insert_runs(store, experiment_id: str, artifact_location: str, records: list[CellRecord]) -> list[str]:
    """Write ``records`` as finished child runs of ``experiment_id`` in one transaction; their run ids. Their
    artifacts are written first, under each run's artifact folder, so a run in the store has all its files."""
    from mlflow.store.tracking.dbmodels.models import SqlLatestMetric, SqlMetric, SqlParam, SqlRun, SqlTag
    from mlflow.utils.uri import append_to_uri_path

    run_ids = [uuid.uuid4().hex for _ in records]
    runs, tags, params, metrics, latest = [], [], [], [], []
    for run_id, record in zip(run_ids, records):
        artifact_uri = append_to_uri_path(artifact_location, run_id, "artifacts")
        if record.files:
            _write_artifacts(artifact_uri, record.files)
        runs.append(
            dict(
                run_uuid=run_id,
                name=record.run_name,
                source_type="UNKNOWN",
                source_name="",
                entry_point_name="",
                user_id=record.tags.get("mlflow.user", "unknown"),
                status=record.status,
                start_time=record.start_ms,
                end_time=record.end_ms,
                deleted_time=None,
                source_version="",
                lifecycle_stage="active",
                artifact_uri=artifact_uri,
                experiment_id=int(experiment_id),
            )
        )
        tags.extend(dict(run_uuid=run_id, key=k, value=v) for k, v in record.tags.items())
        params.extend(dict(run_uuid=run_id, key=k, value=v) for k, v in record.params.items())
        newest: dict[str, dict] = {}
        for key, value, timestamp, step in dict.fromkeys(record.metrics):  # MLflow drops repeated points too
            stored, is_nan = _metric_value(value)
            row = dict(run_uuid=run_id, key=key, value=stored, timestamp=timestamp, step=step, is_nan=is_nan)
            metrics.append(row)
            old = newest.get(key)
            if old is None or (step, timestamp, stored) > (old["step"], old["timestamp"], old["value"]):
                newest[key] = row
        latest.extend(newest.values())
    with store.ManagedSessionMaker(read_only=False) as session:
        for model, rows in ((SqlRun, runs), (SqlTag, tags), (SqlParam, params), (SqlMetric, metrics)):
            if rows:
                session.execute(model.__table__.insert(), rows)
        if latest:
            session.execute(SqlLatestMetric.__table__.insert(), latest)
    return run_ids


def _write_artifacts(artifact_uri: str, files: dict[str, bytes]) -> None:
    import tempfile

    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    with tempfile.TemporaryDirectory(prefix="olb-cell-") as tmp:
        for name, data in files.items():
            Path(tmp, name).write_bytes(data)
        get_artifact_repository(artifact_uri).log_artifacts(tmp)


def finished_runs(store, experiment_ids: Iterable[str], kind: str, key_tag: str) -> list[FinishedRun]:
    """Every active run of ``experiment_ids`` tagged ``olb.kind=kind`` and finished (its status and its tag
    ``olb.status``), newest first, with its tags, parameters and latest metrics; ``cell_id`` is its ``key_tag``."""
    from mlflow.store.tracking.dbmodels.models import SqlLatestMetric, SqlParam, SqlRun, SqlTag
    from sqlalchemy import and_, select
    from sqlalchemy.orm import aliased

    key, kind_tag, status_tag = aliased(SqlTag), aliased(SqlTag), aliased(SqlTag)
    chosen = (
        select(SqlRun.run_uuid, SqlRun.start_time, SqlRun.end_time, key.value)
        .join(key, and_(key.run_uuid == SqlRun.run_uuid, key.key == key_tag))
        .join(kind_tag, and_(kind_tag.run_uuid == SqlRun.run_uuid, kind_tag.key == "olb.kind", kind_tag.value == kind))
        .join(
            status_tag,
            and_(
                status_tag.run_uuid == SqlRun.run_uuid, status_tag.key == "olb.status", status_tag.value == "FINISHED"
            ),
        )
        .where(
            SqlRun.experiment_id.in_([int(e) for e in experiment_ids]),
            SqlRun.status == "FINISHED",
            SqlRun.lifecycle_stage == "active",
        )
    )
    ids = chosen.with_only_columns(SqlRun.run_uuid).scalar_subquery()
    with store.ManagedSessionMaker() as session:
        heads = session.execute(chosen.order_by(SqlRun.start_time.desc())).all()
        tags, params, metrics = defaultdict(dict), defaultdict(dict), defaultdict(dict)
        for table, into in ((SqlTag, tags), (SqlParam, params)):
            for run_id, name, value in session.execute(
                select(table.run_uuid, table.key, table.value).where(table.run_uuid.in_(ids))
            ):
                into[run_id][name] = value
        for run_id, name, value, is_nan in session.execute(
            select(SqlLatestMetric.run_uuid, SqlLatestMetric.key, SqlLatestMetric.value, SqlLatestMetric.is_nan).where(
                SqlLatestMetric.run_uuid.in_(ids)
            )
        ):
            metrics[run_id][name] = math.nan if is_nan else value
    return [
        FinishedRun(
            run_id, cell_id, metrics[run_id], params[run_id], tags[run_id], start / 1000.0, (end or start) / 1000.0
        )
        for run_id, start, end, cell_id in heads
    ]
