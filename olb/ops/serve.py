"""A private MLflow tracking server backed by PostgreSQL, on one machine, for grids that share their tracking.

``python -m olb.ops.serve start FOLDER`` starts (or restarts, on the same data) two processes, each in a
session of its own, and prints the tracking URI and where its credentials are; ``stop FOLDER`` stops them by
their PIDs. Nothing either accepts a connection without a credential:

- PostgreSQL (Debian's ``postgresql``) listens on 127.0.0.1 only (no Unix socket) and asks every client for a
  password (scram-sha-256); its data folder is ``FOLDER/postgres/data`` (0700). PostgreSQL refuses to run as
  root: under root it runs as the system user ``postgres`` (``setpriv``), which must be able to pass through
  FOLDER's parents. Two roles: ``postgres`` (superuser, for administration) and ``mlflow`` (owns the database
  ``mlflow``, nothing else), their passwords in ``FOLDER/pgpass`` (libpq's password file, 0600).
- The MLflow server listens on 127.0.0.1 with MLflow's authentication (``--app-name basic-auth``, its user
  database ``FOLDER/auth.db``); it reaches PostgreSQL with a backend-store URI that carries no password (libpq
  reads it from ``PGPASSFILE``). Its admin account is in ``FOLDER/credentials``, MLflow's credentials file
  format: name it with ``tracking.credentials=FOLDER/credentials`` (or copy it to ``~/.mlflow/credentials``).

No password is ever on a command line. FOLDER is this user's and closed to others (0700; 0711 under root, so
that ``postgres`` can reach its own folder in it); every file in it is 0600. Every wait is bounded.
"""

from __future__ import annotations

import argparse
import configparser
import json
import os
import pwd
import secrets
import shlex
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from olb.grid.auth import read_private, write_private
from olb.ops.probes import ServiceError, free_port, http_ok, pg_bin, pg_env, pg_ready

SERVICE_USER = "postgres"  # what Debian's postgresql package creates; PostgreSQL's own processes run as it under root
DATABASE = "mlflow"  # the database and the role MLflow uses
ADMIN = "admin"  # the MLflow account the grid logs in with
STATE = "server.json"
CREDENTIALS = "credentials"
PGPASS = "pgpass"
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# PostgreSQL's fast shutdown (what is committed stays), then its immediate one; its processes are not in the
# postmaster's process group, it stops them itself
PG_STOP = (signal.SIGINT, signal.SIGQUIT)


@dataclass
class ServiceState:
    """What ``stop`` needs, and what ``start`` prints (``FOLDER/server.json``)."""

    uri: str
    port: int
    pg_port: int
    mlflow_pid: int
    postgres_pid: int


class TrackingService:
    """The PostgreSQL-backed MLflow server whose files are in ``folder`` (see the module's docstring)."""

    def __init__(self, folder: str | os.PathLike, service_user: str = SERVICE_USER):
        self.folder = Path(folder).absolute()
        self.pg_folder = self.folder / "postgres"
        self.pg_data = self.pg_folder / "data"
        self.credentials = self.folder / CREDENTIALS
        self.pgpass = self.folder / PGPASS
        self.service_user = service_user if os.geteuid() == 0 else None
        self._procs: dict[int, subprocess.Popen] = {}  # the processes this object started (reaped on stop)

    # -- the shell's interface ----------------------------------------------------------------------------
    def start(
        self, port: int | None = None, pg_port: int | None = None, workers: int = 1, timeout_s: float = 120
    ) -> ServiceState:
        """Start PostgreSQL, then the MLflow server (creating both on first use); the state ``stop`` reads."""
        if (self.folder / STATE).exists() and self._alive(self.state()):
            raise ServiceError(f"a tracking server of {self.folder} is running: stop it first (stop {self.folder})")
        self._prepare_folder()
        fresh = not (self.pg_data / "PG_VERSION").exists()
        role_password = self._init_postgres() if fresh else None
        pg_port = pg_port or free_port()
        postgres_pid = self._start_postgres(pg_port, timeout_s)
        try:
            if role_password:
                self._create_database(pg_port, role_password)
            port = port or free_port()
            mlflow_pid = self._start_mlflow(port, pg_port, workers, timeout_s)
        except BaseException:
            self._stop_pid(postgres_pid, *PG_STOP)
            raise
        state = ServiceState(f"http://127.0.0.1:{port}", port, pg_port, mlflow_pid, postgres_pid)
        write_private(self.folder / STATE, json.dumps(asdict(state)))
        return state

    def stop(self) -> None:
        """Stop the MLflow server, then PostgreSQL (a fast shutdown: what is committed stays), by their PIDs."""
        state = self.state()
        for pid, signals in ((state.mlflow_pid, (signal.SIGTERM,)), (state.postgres_pid, PG_STOP)):
            if self._ours(pid):
                self._stop_pid(pid, *signals)

    def _ours(self, pid: int) -> bool:
        """Whether ``pid`` is still a process of this folder's server (a PID may be reused once it ended)."""
        if pid in self._procs:
            return True
        try:
            return str(self.folder).encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False

    def state(self) -> ServiceState:
        try:
            return ServiceState(**json.loads(read_private(self.folder / STATE)))
        except FileNotFoundError:
            raise ServiceError(f"no tracking server was started in {self.folder}") from None

    def dsn(self, pg_port: int) -> str:
        """libpq's connection string for MLflow's database (the password comes from ``pgpass``)."""
        return f"host=127.0.0.1 port={pg_port} dbname={DATABASE} user={DATABASE} passfile={self.pgpass}"

    # -- PostgreSQL ---------------------------------------------------------------------------------------
    def _prepare_folder(self) -> None:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = self.folder.lstat()
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o066:
            raise ServiceError(
                f"{self.folder} must be a directory owned by uid {os.geteuid()} that others cannot read or write "
                f"(it is uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}); remove it or choose another"
            )
        # the service user passes through to its own folder; nothing here can be listed by others
        self.folder.chmod(0o711 if self.service_user else 0o700)
        self.pg_folder.mkdir(mode=0o700, exist_ok=True)
        (self.folder / "artifacts").mkdir(mode=0o700, exist_ok=True)
        if self.service_user:
            uid, gid = self._service_ids()
            os.chown(self.pg_folder, uid, gid, follow_symlinks=False)
            if subprocess.run(self._as_service(["test", "-w", str(self.pg_folder)]), timeout=10).returncode:
                raise ServiceError(
                    f"PostgreSQL refuses to run as root, so it runs as '{self.service_user}', which cannot reach "
                    f"{self.pg_folder}: choose a folder whose parents others may pass through (o+x), "
                    "e.g. under /var/tmp"
                )

    def _service_ids(self) -> tuple[int, int]:
        try:
            entry = pwd.getpwnam(str(self.service_user))
        except KeyError:
            raise ServiceError(
                f"PostgreSQL refuses to run as root and there is no user '{self.service_user}' to run it as "
                "(Debian's postgresql package creates it); run as another user, or create it"
            ) from None
        return entry.pw_uid, entry.pw_gid

    def _as_service(self, argv: list[str]) -> list[str]:
        """``argv`` run as the service user under root (PostgreSQL's processes), as is otherwise."""
        if not self.service_user:
            return argv
        return ["setpriv", f"--reuid={self.service_user}", f"--regid={self.service_user}", "--init-groups", *argv]

    def _init_postgres(self) -> str:
        """A new database cluster in ``pg_data``, its superuser's password in ``pgpass``; MLflow's role's password
        (in ``pgpass`` too)."""
        passwords = {"postgres": secrets.token_urlsafe(24), DATABASE: secrets.token_urlsafe(24)}
        write_private(
            self.pgpass,
            "".join(f"127.0.0.1:*:*:{user}:{password}\n" for user, password in passwords.items()),
        )
        pwfile = write_private(self.pg_folder / "initdb.pw", passwords["postgres"] + "\n")
        try:
            if self.service_user:
                os.chown(pwfile, *self._service_ids(), follow_symlinks=False)
            argv = [pg_bin("initdb"), "-D", str(self.pg_data), "--username=postgres", f"--pwfile={pwfile}"]
            argv += ["--auth=scram-sha-256", "--encoding=UTF8", "--locale=C"]
            done = subprocess.run(self._as_service(argv), capture_output=True, text=True, timeout=120, env=pg_env())
        finally:
            pwfile.unlink(missing_ok=True)
        if done.returncode:
            raise ServiceError(f"initdb failed for {self.pg_data}:\n{(done.stdout + done.stderr)[-2000:]}")
        # loopback only, no Unix socket, a password for everyone (initdb's pg_hba.conf replaced)
        with open(self.pg_data / "postgresql.conf", "a") as conf:
            conf.write("listen_addresses = '127.0.0.1'\nunix_socket_directories = ''\n")
            conf.write("password_encryption = 'scram-sha-256'\n")
        (self.pg_data / "pg_hba.conf").write_text("host all all 127.0.0.1/32 scram-sha-256\n")
        return passwords[DATABASE]

    def _start_postgres(self, pg_port: int, timeout_s: float) -> int:
        argv = self._as_service([pg_bin("postgres"), "-D", str(self.pg_data), "-p", str(pg_port)])
        pid = self._spawn(argv, self.folder / "postgres.log", pg_env())
        log = self.folder / "postgres.log"
        self._wait(pid, lambda: pg_ready(self.admin_dsn(pg_port)), timeout_s, "PostgreSQL", log, PG_STOP)
        return pid

    def database_uri(self, pg_port: int) -> str:
        """MLflow's database as a tracking URI, for a driver that writes to it directly (``PGPASSFILE=pgpass``)."""
        return f"postgresql://{DATABASE}@127.0.0.1:{pg_port}/{DATABASE}"

    def admin_dsn(self, pg_port: int) -> str:
        """libpq's connection string for PostgreSQL's superuser (administration, backups)."""
        return f"host=127.0.0.1 port={pg_port} dbname=postgres user=postgres passfile={self.pgpass} connect_timeout=5"

    def _create_database(self, pg_port: int, role_password: str) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.admin_dsn(pg_port), autocommit=True) as conn:
            role = sql.Identifier(DATABASE)
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(role, sql.Literal(role_password)))
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(role, role))

    # -- MLflow -------------------------------------------------------------------------------------------
    def _start_mlflow(self, port: int, pg_port: int, workers: int, timeout_s: float) -> int:
        auth_ini = self.folder / "auth.ini"
        if not self.credentials.exists():
            password = secrets.token_urlsafe(24)
            write_private(
                self.credentials,
                f"[mlflow]\nmlflow_tracking_username = {ADMIN}\nmlflow_tracking_password = {password}\n",
            )
        creds = configparser.ConfigParser()
        creds.read_string(read_private(self.credentials))
        write_private(
            auth_ini,
            "[mlflow]\n"
            "default_permission = NO_PERMISSIONS\n"  # an account sees only what it was granted
            f"database_uri = sqlite:///{self.folder / 'auth.db'}\n"
            f"admin_username = {ADMIN}\n"
            # a successful login is remembered for 60 s, not checked again (PBKDF2) on every request
            "auth_cache_ttl_seconds = 60\n",
        )
        env = {
            **os.environ,
            "PGPASSFILE": str(self.pgpass),
            "MLFLOW_AUTH_CONFIG_PATH": str(auth_ini),
            "MLFLOW_AUTH_ADMIN_PASSWORD": creds["mlflow"]["mlflow_tracking_password"],  # read once, at bootstrap
            "MLFLOW_FLASK_SERVER_SECRET_KEY": secrets.token_hex(32),
            "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",  # no background job runner processes
        }
        for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_URI", "PGPASSWORD"):
            env.pop(name, None)
        argv = [sys.executable, "-m", "mlflow", "server", "--app-name", "basic-auth", "--host", "127.0.0.1"]
        argv += ["--port", str(port), "--workers", str(workers)]
        argv += ["--artifacts-destination", str(self.folder / "artifacts")]
        argv += ["--backend-store-uri", f"postgresql://{DATABASE}@127.0.0.1:{pg_port}/{DATABASE}"]
        pid = self._spawn(argv, self.folder / "mlflow.log", env)
        uri = f"http://127.0.0.1:{port}"
        log = self.folder / "mlflow.log"
        self._wait(pid, lambda: http_ok(uri + "/health"), timeout_s, "the MLflow server", log, (signal.SIGTERM,))
        if http_ok(uri + "/api/2.0/mlflow/experiments/search?max_results=1"):
            self._stop_pid(pid, signal.SIGTERM)
            raise ServiceError(f"the MLflow server at {uri} answered a request without credentials; stopped it")
        return pid

    # -- processes ----------------------------------------------------------------------------------------
    def _spawn(self, argv: list[str], log: Path, env: dict[str, str]) -> int:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | _O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "ab") as out:
            proc = subprocess.Popen(
                argv, cwd=self.folder, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                start_new_session=True, umask=0o077,  # what they create (auth.db, artifacts) is private too
            )  # fmt: skip
        self._procs[proc.pid] = proc
        return proc.pid

    def _wait(
        self, pid: int, ready: Callable[[], bool], timeout_s: float, what: str, log: Path, stop: tuple[int, ...]
    ) -> None:
        """Until ``ready()``; ServiceError with the end of ``log`` when ``pid`` ends or ``timeout_s`` passes
        first (what is left of it then stopped with the ``stop`` signals)."""
        deadline = time.monotonic() + timeout_s
        while not ready():
            if not self._running(pid) or time.monotonic() > deadline:
                self._stop_pid(pid, *stop)
                reason = "ended" if time.monotonic() <= deadline else f"was not ready within {timeout_s:.0f} s"
                tail = log.read_text(errors="replace")[-2000:]
                raise ServiceError(f"{what} {reason} (its log, {log}):\n{tail}")
            time.sleep(0.2)

    def _running(self, pid: int) -> bool:
        """Whether anything of the process group ``pid`` leads is left."""
        proc = self._procs.get(pid)
        if proc is not None:
            proc.poll()  # reaps the leader when it ended (a zombie would still count)
        try:
            os.killpg(pid, 0)  # the session's group: the leader, or what it left
        except ProcessLookupError:
            return False
        return True

    def _alive(self, state: ServiceState) -> bool:
        return any(self._ours(pid) and self._running(pid) for pid in (state.mlflow_pid, state.postgres_pid))

    def _stop_pid(self, pid: int, *signals: int, timeout_s: float = 30) -> None:
        """Each of ``signals`` in turn to the process group ``pid`` leads, until it is gone (``timeout_s`` after
        each), then SIGKILL."""
        for signum in (*signals, signal.SIGKILL):
            try:
                os.killpg(pid, signum)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + timeout_s
            while self._running(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if not self._running(pid):
                break
        self._procs.pop(pid, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m olb.ops.serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("folder", help="the server's private folder (data, credentials, logs)")
    parser.add_argument("--port", type=int, help="the MLflow server's port (default: a free one)")
    parser.add_argument("--pg-port", type=int, help="PostgreSQL's port (default: a free one)")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="the MLflow server's worker processes (default 1: with more, uvicorn leaves Nagle's algorithm on and "
        "every answer waits ~40 ms for a delayed ACK)",
    )
    args = parser.parse_args(argv)
    service = TrackingService(args.folder)
    try:
        if args.action == "stop":
            service.stop()
            print(f"stopped the tracking server of {service.folder}")
            return 0
        state = service.start(args.port, args.pg_port, args.workers)
    except (ServiceError, PermissionError) as err:
        print(f"olb.ops.serve: error: {err}", file=sys.stderr)
        return 2
    # shell assignments: eval "$(python -m olb.ops.serve start FOLDER)"
    shown = {"uri": state.uri, "credentials": service.credentials, "pgpass": service.pgpass}
    shown["postgres"] = f"127.0.0.1:{state.pg_port}"
    shown["database"] = service.database_uri(state.pg_port)
    print("\n".join(f"{key}={shlex.quote(str(value))}" for key, value in shown.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
