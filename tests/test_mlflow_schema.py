"""MLflow's tables are written in bulk only on a schema revision the adapter (olb.grid.recording.tracking_sql) was
tested with: its check reads the database's revision, and on an untested one the grid records and resumes
through MLflow's public client, with the same results, and says so once."""

from __future__ import annotations

import logging
import re
import sqlite3
from pathlib import Path

import sqlalchemy

import olb
import olb.ops.testing  # noqa: F401 - registers _grid_stub in this process
from olb.grid import compose, run_grid
from olb.grid.recording import tracking, tracking_sql

GRID = ["imports=[olb.ops.testing]", "algorithms=[_grid_stub]", "datasets=[emotions]", "seeds=3", "plots=false"]
GRID += ["backend=serial"]
UNTESTED = "0123456789ab"  # a revision no MLflow has
FALLBACK = "is not one olb's bulk writer was tested with"


def test_the_check_reads_the_databases_schema_revision(tmp_path):
    from mlflow.store.db.utils import _get_latest_schema_revision
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    client.search_experiments()  # MLflow makes its tables
    revision = tracking_sql.schema_revision(sqlalchemy.create_engine(uri))
    assert revision == _get_latest_schema_revision()  # the store MLflow made is at the head of its migrations
    assert (tracking_sql.bulk_store(client) is not None) == (revision in tracking_sql.TESTED_SCHEMAS)
    db = sqlite3.connect(tmp_path / "mlflow.db")
    with db:
        db.execute("UPDATE alembic_version SET version_num = ?", (UNTESTED,))
    db.close()
    assert tracking_sql.schema_revision(sqlalchemy.create_engine(uri)) == UNTESTED
    assert tracking_sql.bulk_store(client) is None  # the same store, at an untested revision: MLflow's client
    sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE t (x)").connection.close()
    assert tracking_sql.schema_revision(sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'other.db'}")) is None


def test_an_untested_schema_is_recorded_and_resumed_through_mlflows_client(tmp_path, monkeypatch, caplog):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    bulk = run_grid(compose([*GRID, "name=bulk", f"tracking.uri={uri}"]), tmp_path / "bulk")
    assert bulk.exit_code == 0 and bulk.n_run == 3

    def bulk_path(*args, **kwargs):
        raise AssertionError("the bulk path was taken on an untested schema")

    with monkeypatch.context() as patched:  # an adapter tested with another revision than this MLflow's
        patched.setattr(tracking_sql, "TESTED_SCHEMAS", frozenset({UNTESTED}))
        patched.setattr(tracking, "insert_runs", bulk_path)
        patched.setattr(tracking, "finished_runs", bulk_path)
        grid = compose([*GRID, "name=client", f"tracking.uri={uri}"])
        with caplog.at_level(logging.INFO, logger="olb.grid"):
            first = run_grid(grid, tmp_path / "first")
        said = [r.getMessage() for r in caplog.records if FALLBACK in r.getMessage()]
        assert len(said) == 1 and UNTESTED in said[0], said
        assert first.exit_code == 0 and first.n_run == 3
        again = run_grid(grid, tmp_path / "again")
        assert (again.exit_code, again.n_run, again.n_resumed) == (0, 0, 3)
        assert set(again.cells["run_id"]) == set(first.cells["run_id"])
    # what the client wrote, the bulk path resumes
    after = run_grid(compose([*GRID, "name=client", f"tracking.uri={uri}"]), tmp_path / "after")
    assert (after.exit_code, after.n_run, after.n_resumed) == (0, 0, 3)

    client = MlflowClient(uri)
    by_cell = lambda result: {  # noqa: E731 - cell id -> its run as MLflow reads it back
        run.data.tags["olb.cell_id"]: run.data for run in map(client.get_run, result.cells["run_id"])
    }
    from_bulk, from_client = by_cell(bulk), by_cell(first)
    assert set(from_bulk) == set(from_client) == set(bulk.cells["cell_id"])
    for cell_id, data in from_client.items():
        assert data.params == from_bulk[cell_id].params
        assert data.metrics["rank_loss"] == from_bulk[cell_id].metrics["rank_loss"]
        assert set(data.metrics) == set(from_bulk[cell_id].metrics) and data.tags["olb.status"] == "FINISHED"
    columns = [c for c in bulk.cells.columns if c in ("cell_id", "status", "rank_loss")]
    assert len(columns) == 3
    assert bulk.cells[columns].sort_values("cell_id").values.tolist() == (
        first.cells[columns].sort_values("cell_id").values.tolist()
    )


def test_only_the_adapter_knows_mlflows_tables_and_the_interface_names_nothing_of_mlflow():
    package = Path(olb.__file__).parent
    knowing = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if re.search(r"mlflow\.store|SqlRun|SqlLatestMetric", path.read_text())
    }
    assert knowing == {"grid/recording/tracking_sql.py"}
    for interface in ("grid/recording/tracker.py", "grid/driver/dryrun.py"):
        assert "mlflow" not in (package / interface).read_text().lower(), interface
