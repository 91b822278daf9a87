"""Cells' runs written and read in bulk straight through MLflow's SQLAlchemy store (a SQLite file, or a database
URI such as ``postgresql://``), in the tables MLflow's own calls fill.

MLflow's client writes a run in three to four transactions (create, log, artifacts, terminate), each opening a
session and reading the run back: ~50 ms per cell on SQLite. :func:`insert_runs` writes a whole batch of cells,
each already FINISHED (or FAILED) with all its tags, parameters, metrics, metric history and dataset input, in one
transaction: a batch is in the store entirely or not at all, so a driver killed while writing leaves no
half-written run (its cells run again on resume). :func:`finished_runs` reads the resume index (every finished run of a kind with
its tags, parameters and latest metrics) in three queries, whatever the number of runs, instead of MLflow's
search, which builds one entity per run.

These tables are MLflow's own, not its public interface: this module is the one place in olb that knows them, and
it is used only on a database whose schema revision (its ``alembic_version``, which MLflow keeps at the head of
its migrations) is one of :data:`TESTED_SCHEMAS`, the revisions its writes were checked against MLflow's
(tests/test_grid_driver.py, tests/test_mlflow_schema.py). On any other revision :func:`bulk_store` returns None and
the tracker writes and reads through MLflow's public client instead, saying so once.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from olb.grid.recording.tracker import FinishedRun

if TYPE_CHECKING:
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    from mlflow.tracking import MlflowClient
    from sqlalchemy import ColumnElement, Engine, Table
    from sqlalchemy.orm import Session
    from sqlalchemy.sql.selectable import NamedFromClause

    from olb.grid.recording.tracking_cells import CellRecord, DatasetRecord

    SqlStore = SqlAlchemyStore  # what the trackers hold of a SQL store (they never look inside)

log = logging.getLogger("olb.grid")
SQL_FLOAT_MAX = 1.7976931348623157e308  # what MLflow stores for an infinite metric
DATASET_CONTEXT_TAG = "mlflow.data.context"  # an input's tag: what the run did with the data set
# MLflow's schema revisions (alembic_version) whose tables this module writes as MLflow's calls do: mlflow 3.17's
TESTED_SCHEMAS = frozenset({"dc11669786a5"})


def bulk_store(client: MlflowClient) -> SqlAlchemyStore | None:
    """The SQLAlchemy store behind an MLflow client when its schema is one of :data:`TESTED_SCHEMAS` (cells are
    then written and read in bulk), else None (through MLflow's client: a server, or an untested schema). Which
    path a SQL store takes is logged."""
    import mlflow
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    store = client._tracking_client.store
    if not isinstance(store, SqlAlchemyStore):
        return None
    revision = schema_revision(store.engine)
    if revision in TESTED_SCHEMAS:
        log.info("olb.grid: cells written and resumed in bulk in MLflow's tables (schema %s, tested)", revision)
        return store
    log.warning(
        "olb.grid: MLflow's schema %s (mlflow %s) is not one olb's bulk writer was tested with (%s): cells are "
        "written and resumed through MLflow's client, more slowly",
        revision,
        mlflow.__version__,
        ", ".join(sorted(TESTED_SCHEMAS)),
    )
    return None


def schema_revision(engine: Engine) -> str | None:
    """The schema revision of an MLflow database (its ``alembic_version``), None when it has none."""
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    try:
        with engine.connect() as connection:
            return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except SQLAlchemyError:  # no such table: not a database MLflow made
        return None


def _metric_value(value: float) -> tuple[float, bool]:
    """A metric's stored value and whether it is NaN (MLflow's encoding: NaN as 0, infinities clipped)."""
    if math.isnan(value):
        return 0.0, True
    if math.isinf(value):
        return (SQL_FLOAT_MAX if value > 0 else -SQL_FLOAT_MAX), False
    return value, False


def insert_runs(
    store: SqlAlchemyStore, experiment_id: str, artifact_location: str, records: list[CellRecord]
) -> list[str]:
    """Write ``records`` as finished child runs of ``experiment_id`` in one transaction; their run ids. Their
    artifacts are written first, under each run's artifact folder, so a run in the store has all its files."""
    from mlflow.store.tracking.dbmodels.models import SqlLatestMetric, SqlMetric, SqlParam, SqlRun, SqlTag
    from mlflow.utils.uri import append_to_uri_path

    run_ids = [_run_id() for _ in records]
    Row = dict[str, object]  # one table row, by column
    runs: list[Row] = []
    tags: list[Row] = []
    params: list[Row] = []
    metrics: list[Row] = []
    latest: list[Row] = []
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
        for model, rows in (
            (SqlRun, runs),
            (SqlTag, tags),
            (SqlParam, params),
            (SqlMetric, metrics),
            (SqlLatestMetric, latest),
        ):
            _insert(session, model.__table__, rows)
        _insert_inputs(session, int(experiment_id), [(r, record.dataset) for r, record in zip(run_ids, records)])
    return run_ids


def _insert_inputs(session: Session, experiment_id: int, inputs: list[tuple[str, DatasetRecord | None]]) -> None:
    """Each run's data set as its dataset input, in the tables ``MlflowClient.log_inputs`` fills: a data set (name
    and digest) once per experiment, then one input per run with its context tag."""
    from mlflow.store.tracking.dbmodels.models import SqlDataset, SqlInput, SqlInputTag
    from sqlalchemy import select

    wanted = {(d.name, d.digest): d for _, d in inputs if d is not None}
    if not wanted:
        return
    table = SqlDataset.__table__
    known: dict[tuple[str, str], str] = {
        (str(name), str(digest)): str(dataset_uuid)
        for name, digest, dataset_uuid in session.connection().execute(
            select(table.c.name, table.c.digest, table.c.dataset_uuid).where(
                table.c.experiment_id == experiment_id, table.c.name.in_({name for name, _ in wanted})
            )
        )
    }
    new = {key: uuid.uuid4().hex for key in wanted if key not in known}
    _insert(
        session,
        table,
        [
            dict(
                dataset_uuid=new[key],
                experiment_id=experiment_id,
                name=d.name,
                digest=d.digest,
                dataset_source_type=d.source_type,
                dataset_source=d.source,
                dataset_schema=None,
                dataset_profile=None,
            )
            for key, d in wanted.items()
            if key in new
        ],
    )
    uuids = {**known, **new}
    edges: list[dict[str, object]] = []
    edge_tags: list[dict[str, object]] = []
    for run_id, d in inputs:
        if d is not None:
            input_uuid = uuid.uuid4().hex
            source = uuids[(d.name, d.digest)]
            edges.append(
                dict(
                    input_uuid=input_uuid,
                    source_type="DATASET",
                    source_id=source,
                    destination_type="RUN",
                    destination_id=run_id,
                    step=0,
                )
            )
            edge_tags.append(dict(input_uuid=input_uuid, name=DATASET_CONTEXT_TAG, value=d.context))
    _insert(session, SqlInput.__table__, edges)
    _insert(session, SqlInputTag.__table__, edge_tags)


def _insert(session: Session, table: Table, rows: list[dict[str, object]]) -> None:
    """``rows`` into ``table`` within the session's transaction: straight through the database driver, as one
    ``COPY`` on PostgreSQL (psycopg: a tenth of the time of one ``INSERT`` per row) or ``executemany`` where its
    parameter style is known (SQLAlchemy's per-row processing costs more than SQLite's insert), else through
    SQLAlchemy."""
    if not rows:
        return
    connection = session.connection()
    mark = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(connection.dialect.paramstyle)
    if mark is None:
        connection.execute(table.insert(), rows)
        return
    columns = list(rows[0])
    values = [tuple(row[c] for c in columns) for row in rows]
    cursor = connection.connection.cursor()
    try:
        if connection.dialect.driver == "psycopg":
            with cursor.copy(f"COPY {table.name} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in values:
                    copy.write_row(row)
        else:
            sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))})"
            cursor.executemany(sql, values)
    finally:
        cursor.close()


def _run_id() -> str:
    """A new run id: 32 hex digits like MLflow's, time-ordered (a UUID version 7's layout), so that a batch's rows
    land together at the end of the run-id indexes rather than all over them."""
    value = (time.time_ns() // 1_000_000) << 80 | (7 << 76) | (uuid.uuid4().int & ((1 << 76) - 1))
    return f"{value:032x}"


def _write_artifacts(artifact_uri: str, files: dict[str, bytes]) -> None:
    import tempfile

    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    with tempfile.TemporaryDirectory(prefix="olb-cell-") as tmp:
        for name, data in files.items():
            Path(tmp, name).write_bytes(data)
        get_artifact_repository(artifact_uri).log_artifacts(tmp)


def finished_runs(store: SqlAlchemyStore, experiment_ids: Iterable[str], kind: str, key_tag: str) -> list[FinishedRun]:
    """Every active run of ``experiment_ids`` tagged ``olb.kind=kind`` and finished (its status and its tag
    ``olb.status``), newest first, with its tags, parameters and latest metrics; ``cell_id`` is its ``key_tag``."""
    from mlflow.store.tracking.dbmodels.models import SqlLatestMetric, SqlParam, SqlRun, SqlTag
    from sqlalchemy import and_, select

    runs, tag = SqlRun.__table__.c, SqlTag.__table__

    def tagged(name: str, value: str | None = None) -> tuple[NamedFromClause, ColumnElement[bool]]:
        alias = tag.alias()
        on = and_(alias.c.run_uuid == runs.run_uuid, alias.c.key == name)
        return alias, on if value is None else and_(on, alias.c.value == value)

    key, key_on = tagged(key_tag)
    kind_tag, kind_on = tagged("olb.kind", kind)
    status_tag, status_on = tagged("olb.status", "FINISHED")
    chosen = (
        select(runs.run_uuid, runs.start_time, runs.end_time, key.c.value)
        .select_from(SqlRun.__table__.join(key, key_on).join(kind_tag, kind_on).join(status_tag, status_on))
        .where(
            runs.experiment_id.in_([int(e) for e in experiment_ids]),
            runs.status == "FINISHED",
            runs.lifecycle_stage == "active",
        )
    )
    ids = chosen.with_only_columns(runs.run_uuid).scalar_subquery()
    tags: dict[str, dict] = defaultdict(dict)
    params: dict[str, dict] = defaultdict(dict)
    metrics: dict[str, dict] = defaultdict(dict)
    with store.ManagedSessionMaker() as session:
        connection = session.connection()
        heads = connection.execute(chosen.order_by(runs.start_time.desc())).all()
        for table, into in ((tag, tags), (SqlParam.__table__, params)):
            for run_id, name, value in connection.execute(
                select(table.c.run_uuid, table.c.key, table.c.value).where(table.c.run_uuid.in_(ids))
            ):
                into[run_id][name] = value
        latest = SqlLatestMetric.__table__.c
        for run_id, name, value, is_nan in connection.execute(
            select(latest.run_uuid, latest.key, latest.value, latest.is_nan).where(latest.run_uuid.in_(ids))
        ):
            metrics[run_id][name] = math.nan if is_nan else value
    return [
        FinishedRun(
            run_id, cell_id, metrics[run_id], params[run_id], tags[run_id], start / 1000.0, (end or start) / 1000.0
        )
        for run_id, start, end, cell_id in heads
    ]
