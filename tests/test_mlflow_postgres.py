"""olb.grid against the documented shared tracking: an MLflow server with authentication, backed by PostgreSQL
(``python -m olb.ops.serve``), both on 127.0.0.1 and both asking for a password. The runs over the REST API and
in PostgreSQL's tables, resume after a restart of both, and a missing or wrong credential refused before any
work."""

from __future__ import annotations

import configparser
import importlib.util
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import requests

from olb.grid import GridConfigError, compose, run_grid
from olb.ops.probes import ServiceError, pg_bin
from olb.ops.serve import SERVICE_USER, TrackingService

pytestmark = pytest.mark.e2e

EXPERIMENT = "olb/pg_served"
GRID = [
    "backend=serial",
    "seeds=2",
    "datasets=[emotions]",
    "imports=[olb.ops.testing]",
    "algorithms=[_grid_stub]",
    "+algorithm._grid_stub.params.delay_s=[0.0,0.001]",
    "plots=false",
    "tracking=server",
]
CREDENTIAL_VARS = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")


def why_no_postgres() -> str | None:
    """Why this machine cannot run the service, or None."""
    try:
        pg_bin("initdb")
    except ServiceError as err:
        return str(err)
    for module, package in (("psycopg", "psycopg (pip install -e '.[cluster]')"), ("flask_wtf", "mlflow[auth]")):
        if importlib.util.find_spec(module) is None:
            return f"{package} is not installed"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVICE_USER)
        except KeyError:
            return f"PostgreSQL refuses root and there is no user '{SERVICE_USER}' to run it as"
    return None


def serve(action: str, folder: Path) -> dict[str, str]:
    """``python -m olb.ops.serve ACTION FOLDER``, the shell's interface; the assignments it prints."""
    done = subprocess.run(
        [sys.executable, "-m", "olb.ops.serve", action, str(folder)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


@pytest.fixture(scope="module")
def service():
    reason = why_no_postgres()
    if reason:
        pytest.skip(reason)
    folder = Path(tempfile.mkdtemp(prefix="olb-pg-"))  # under /tmp: PostgreSQL's user can reach it under root
    served = TrackingService(folder)
    try:
        shown = serve("start", folder)
        assert shown == {
            "uri": served.state().uri,
            "credentials": str(served.credentials),
            "pgpass": str(served.pgpass),
            "postgres": f"127.0.0.1:{served.state().pg_port}",
            "database": served.database_uri(served.state().pg_port),
        }
        yield served
    finally:
        pids = []
        if (folder / "server.json").exists():
            state = served.state()
            pids = [state.mlflow_pid, state.postgres_pid]
            served.stop()
        shutil.rmtree(folder, ignore_errors=True)
        for pid in pids:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)


def credentials(service: TrackingService) -> tuple[str, str]:
    creds = configparser.ConfigParser()
    creds.read(service.credentials)
    return creds["mlflow"]["mlflow_tracking_username"], creds["mlflow"]["mlflow_tracking_password"]


def api(service: TrackingService, method: str, path: str, **kwargs) -> dict:
    r = requests.request(
        method, f"{service.state().uri}/api/2.0/mlflow/{path}", auth=credentials(service), timeout=30, **kwargs
    )
    r.raise_for_status()
    return r.json()


def query(service: TrackingService, sql: str, *params, admin: bool = False) -> list[tuple]:
    import psycopg

    pg_port = service.state().pg_port
    with psycopg.connect(service.admin_dsn(pg_port) if admin else service.dsn(pg_port)) as conn:
        return conn.execute(sql, params).fetchall()


def cell_runs_in_postgres(service: TrackingService) -> dict[str, str]:
    """run id -> status of every cell run of EXPERIMENT, read from MLflow's tables."""
    rows = query(
        service,
        "SELECT r.run_uuid, r.status FROM runs r JOIN experiments e ON e.experiment_id = r.experiment_id "
        "JOIN tags t ON t.run_uuid = r.run_uuid WHERE e.name = %s AND t.key = 'olb.kind' AND t.value = 'cell'",
        EXPERIMENT,
    )
    return dict(rows)


def test_nothing_answers_without_a_credential(service, tmp_path):
    import psycopg

    state = service.state()
    user, password = credentials(service)
    search = f"{state.uri}/api/2.0/mlflow/experiments/search"
    assert requests.get(search, params={"max_results": 1}, timeout=10).status_code == 401
    assert requests.get(search, params={"max_results": 1}, auth=(user, "wrong"), timeout=10).status_code == 401
    assert requests.get(search, params={"max_results": 1}, auth=(user, password), timeout=10).ok
    for pg_password in ("", "wrong"):
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(
                host="127.0.0.1", port=state.pg_port, dbname="mlflow", user="mlflow", password=pg_password,
                passfile=str(tmp_path / "absent"), connect_timeout=5,
            )  # fmt: skip
    assert query(service, "SHOW listen_addresses", admin=True) == [("127.0.0.1",)]
    assert query(service, "SHOW unix_socket_directories", admin=True) == [("",)]
    assert query(service, "SELECT rolsuper FROM pg_roles WHERE rolname = 'mlflow'") == [(False,)]
    # private files; PostgreSQL's data folder its user's alone
    assert stat.S_IMODE(service.folder.stat().st_mode) & 0o066 == 0
    for name in ("credentials", "pgpass", "auth.db", "auth.ini", "server.json"):
        assert stat.S_IMODE((service.folder / name).stat().st_mode) == 0o600, name
    assert stat.S_IMODE(service.pg_data.stat().st_mode) == 0o700
    # no secret on any command line of the machine
    secrets = [password] + [line.strip().rsplit(":", 1)[1] for line in service.pgpass.read_text().splitlines()]
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().decode(errors="replace")
        except OSError:
            continue
        assert not any(secret in text for secret in secrets), cmdline


def test_grid_recorded_in_postgres_and_resumed_after_a_restart(service, tmp_path, monkeypatch):
    for name in CREDENTIAL_VARS:
        monkeypatch.delenv(name, raising=False)  # and restored after the tracker set them
    grid = lambda: compose(  # noqa: E731
        [*GRID, "name=pg_served", f"tracking.uri={service.state().uri}", f"tracking.credentials={service.credentials}"]
    )
    first = run_grid(grid(), tmp_path / "first")
    assert first.exit_code == 0 and len(first.cells) == 4
    exp = api(service, "GET", "experiments/get-by-name", params={"experiment_name": EXPERIMENT})["experiment"]
    runs = api(service, "POST", "runs/search", json={"experiment_ids": [exp["experiment_id"]], "max_results": 100})
    tags = lambda run: {t["key"]: t["value"] for t in run["data"].get("tags", [])}  # noqa: E731
    cells = {r["info"]["run_id"]: r for r in runs["runs"] if tags(r).get("olb.kind") == "cell"}
    assert set(cells) == set(first.cells["run_id"])
    assert {tags(r)["mlflow.parentRunId"] for r in cells.values()} == {first.parent_run_id}
    for run in cells.values():
        metrics = {m["key"]: m["value"] for m in run["data"]["metrics"]}
        row = first.cells.set_index("run_id").loc[run["info"]["run_id"]]
        assert metrics["rank_loss"] == pytest.approx(row["rank_loss"], rel=1e-12)
    assert cell_runs_in_postgres(service) == dict.fromkeys(first.cells["run_id"], "FINISHED")

    before = service.state()
    serve("stop", service.folder)
    for pid in (before.mlflow_pid, before.postgres_pid):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    service.start()  # the same data and credentials, new ports
    second = run_grid(grid(), tmp_path / "second")
    assert second.exit_code == 0
    assert (second.n_run, second.n_resumed) == (0, 4) and set(second.cells["run_id"]) == set(first.cells["run_id"])
    assert cell_runs_in_postgres(service) == dict.fromkeys(first.cells["run_id"], "FINISHED")


def test_a_driver_writing_to_the_database_directly_is_seen_by_the_server(service, tmp_path, monkeypatch):
    """The fast path: the driver writes its cells into PostgreSQL itself (a batch per transaction), its password
    from PGPASSFILE; the server serves the same runs. Without the password file, or with a password in the URI,
    the grid is refused before any work."""
    uri = service.database_uri(service.state().pg_port)
    grid = [*GRID, "name=pg_direct", f"tracking.uri={uri}", f"hydra.run.dir={tmp_path / 'cli'}"]
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "absent"))
    with pytest.raises(GridConfigError, match="refuses the connection: .*password"):
        run_grid(compose(grid), tmp_path / "no-password")
    with pytest.raises(GridConfigError, match="the URI carries a password"):
        run_grid(compose([*grid, f"tracking.uri={uri.replace('mlflow@', 'mlflow:secret@')}"]), tmp_path / "in-uri")

    monkeypatch.setenv("PGPASSFILE", str(service.pgpass))
    first = run_grid(compose(grid), tmp_path / "first")
    assert first.exit_code == 0 and len(first.cells) == 4
    exp = api(service, "GET", "experiments/get-by-name", params={"experiment_name": "olb/pg_direct"})["experiment"]
    runs = api(service, "POST", "runs/search", json={"experiment_ids": [exp["experiment_id"]], "max_results": 100})
    served = {r["info"]["run_id"]: r["info"]["status"] for r in runs["runs"]}
    assert {run_id: served.get(run_id) for run_id in first.cells["run_id"]} == dict.fromkeys(
        first.cells["run_id"], "FINISHED"
    )
    second = run_grid(compose(grid), tmp_path / "second")
    assert (second.exit_code, second.n_run, second.n_resumed) == (0, 0, 4)


def test_a_batch_copied_into_postgres_holds_what_mlflows_own_calls_would(service, tmp_path, monkeypatch, data_dir):
    """The bulk path on PostgreSQL (one COPY per table in one transaction) against MLflow's own calls."""
    from test_grid_driver import assert_bulk_writes_as_mlflow, stub_store

    monkeypatch.setenv("PGPASSFILE", str(service.pgpass))
    monkeypatch.chdir(tmp_path)  # MLflow's default artifact root on a database: ./mlruns
    assert_bulk_writes_as_mlflow(*stub_store(service.database_uri(service.state().pg_port), "pg_bulk", data_dir))


def test_a_missing_or_wrong_credential_is_refused_before_any_work(service, tmp_path, monkeypatch):
    uri = service.state().uri
    for name in CREDENTIAL_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.mlflow/credentials
    grid = [*GRID, "name=pg_refused", f"tracking.uri={uri}", f"hydra.run.dir={tmp_path / 'cli'}"]
    done = subprocess.run(
        [sys.executable, "-m", "olb.grid", *grid], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"the MLflow server at {uri} asks for credentials (HTTP 401) and there are none" in done.stderr
    assert "Traceback" not in done.stderr

    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "admin")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "wrong")
    with pytest.raises(GridConfigError, match=f"the MLflow server at {uri} refuses the credentials of user 'admin'"):
        run_grid(compose(grid), tmp_path / "wrong")

    shared = tmp_path / "credentials"
    shutil.copy(service.credentials, shared)
    shared.chmod(0o644)
    with pytest.raises(GridConfigError, match=f"{shared} must be a regular file .* that only its owner can read"):
        run_grid(compose([*grid, f"tracking.credentials={shared}"]), tmp_path / "shared")

    answer = requests.get(
        f"{uri}/api/2.0/mlflow/experiments/get-by-name",
        params={"experiment_name": "olb/pg_refused"},
        auth=credentials(service),
        timeout=10,
    )
    assert answer.status_code == 404  # nothing was recorded


def test_a_folder_others_can_read_is_refused(tmp_path):
    folder = tmp_path / "open"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    with pytest.raises(ServiceError, match=f"{folder} must be a directory .* that others cannot read or write"):
        TrackingService(folder).start()
    assert not list(folder.iterdir())  # nothing was created, nothing started


def test_a_stopped_database_ends_the_grid_within_its_bound_and_a_rerun_completes_it(service, tmp_path, monkeypatch):
    """PostgreSQL's postmaster and backends stopped (SIGSTOP) mid-grid, the driver writing straight into it: their
    sockets still accept and acknowledge, so only the deadline of each call (``tracking.timeout_s`` + 5 s) sees
    it. The grid ends with exit 4 naming the database; after SIGCONT the same command closes the lost driver's
    parent run and completes the grid, every cell recorded once."""
    from ray_probe import descendants
    from test_grid_lost import _finish, _start_grid, _wait_for

    monkeypatch.setenv("PGPASSFILE", str(service.pgpass))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    state = service.state()
    grid = ["backend=serial", "seeds=8", "name=pg_hung", "+algorithm._grid_stub.params.delay_s=1.0"]
    grid += [f"tracking.uri={service.database_uri(state.pg_port)}", "tracking.timeout_s=10", "tracking.batch_cells=1"]

    def runs(kind: str) -> list[tuple[str, str, str]]:
        """(run id, status, olb.cell_id or '') of every run of this ``kind`` of olb/pg_hung."""
        return query(
            service,
            "SELECT r.run_uuid, r.status, coalesce(c.value, '') FROM runs r "
            "JOIN experiments e ON e.experiment_id = r.experiment_id "
            "JOIN tags k ON k.run_uuid = r.run_uuid AND k.key = 'olb.kind' AND k.value = %s "
            "LEFT JOIN tags c ON c.run_uuid = r.run_uuid AND c.key = 'olb.cell_id' WHERE e.name = 'olb/pg_hung'",
            kind,
        )

    proc = _start_grid(tmp_path, *grid)
    stopped: set[int] = set()
    try:
        _wait_for(lambda: len(runs("cell")) >= 2, 240, "two recorded cells", proc)
        stopped = descendants(state.postgres_pid)  # the postmaster and every backend
        signal_each(stopped, signal.SIGSTOP)
        code, out, seconds = _finish(proc, 120)
        assert code == 4, out[-3000:]
        # the deadline (15 s), a cell's second, the driver's end (its tables written)
        assert seconds < 40, (seconds, out[-2000:])
        line = f"the tracking database at 127.0.0.1:{state.pg_port}/mlflow does not answer (no reply within 15 s)"
        assert line in out and "rerun the same command" in out and "Traceback" not in out, out[-3000:]
    finally:
        signal_each(stopped, signal.SIGCONT)
    before = runs("cell")
    assert 2 <= len(before) < 8 and len({cell for _, _, cell in before}) == len(before)
    assert [status for _, status, _ in runs("grid")] == ["RUNNING"]  # no one could close it
    proc = _start_grid(tmp_path, *grid)
    code, out, _ = _finish(proc, 240)
    assert code == 0, out[-3000:]
    assert "8 cells:" in out and "0 failed" in out, out[-2000:]
    cells = runs("cell")
    assert len(cells) == len({cell for _, _, cell in cells}) == 8 and {s for _, s, _ in cells} == {"FINISHED"}
    assert sorted(status for _, status, _ in runs("grid")) == ["FINISHED", "KILLED"]  # the lost one closed


def test_every_connection_to_the_database_carries_its_time_outs(service, monkeypatch):
    """The store's connections (MLflow's engine, which the driver's writer uses) have the statement time-out on
    the server and libpq's connect and TCP user time-outs and keepalives on the client."""
    from olb.grid.planning.config import TrackingConfig
    from olb.grid.recording.tracking_database import MlflowDatabaseTracker

    monkeypatch.setenv("PGPASSFILE", str(service.pgpass))
    uri = service.database_uri(service.state().pg_port)
    tracker = MlflowDatabaseTracker(TrackingConfig(uri=uri, timeout_s=12), "olb/pg_bounds", read_only=True)
    assert tracker.sql is not None
    with tracker.sql.engine.connect() as conn:
        assert conn.exec_driver_sql("SHOW statement_timeout").scalar() == "12s"
        client = conn.connection.dbapi_connection.info.get_parameters()
    assert {k: client.get(k) for k in ("connect_timeout", "tcp_user_timeout", "keepalives_idle")} == {
        "connect_timeout": "12",
        "tcp_user_timeout": "12000",
        "keepalives_idle": "10",
    }


def signal_each(pids: set[int], sig: signal.Signals) -> None:
    """``sig`` to each of ``pids`` still there (a backend may end meanwhile)."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
