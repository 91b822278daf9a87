"""MLflow on a database server (``tracking.uri=postgresql://USER@HOST:PORT/DB``): the driver writes its cells
straight into the database an MLflow server serves (:mod:`olb.grid.recording.tracking_sql`: a batch of cells per
transaction), while the server serves the UI and every other client from the same tables.

The password never travels in the URI (a command line anyone on the machine may read): libpq reads it from
``PGPASSFILE`` (or ``~/.pgpass``), a file only its owner may read. A URI that carries one is refused, and so is a
database that does not answer or refuses the login, in seconds and before any work, naming the address and
why. One that stops answering during the grid ends it like a lost tracking server (exit 4).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from olb.grid.recording.tracking import MlflowTracker, first_line

# What psycopg/SQLAlchemy say of a database that is gone (or refuses the login)
UNREACHABLE = (
    "connection refused",
    "connection failed",
    "could not connect",
    "server closed the connection",
    "terminating connection",
    "connection timeout",
    "timeout expired",
)


class MlflowDatabaseTracker(MlflowTracker):
    """MLflow's tables in a database server, written by the driver directly."""

    unreachable = UNREACHABLE

    def _connect(self, timeout_s: float) -> None:
        check_database(self.uri, timeout_s)

    def store_name(self) -> str:
        return f"the tracking database at {where(self.uri)}"


def where(uri: str) -> str:
    """``host:port/database`` of a database URI (what messages name; never a password).

    >>> where("postgresql://mlflow@127.0.0.1:5432/mlflow")
    '127.0.0.1:5432/mlflow'
    """
    parts = urlsplit(uri)
    return f"{parts.hostname}:{parts.port or ''}{parts.path}"


def check_database(uri: str, timeout_s: float) -> None:
    """Refuse a URI with a password in it, and a database that does not take a connection within ``timeout_s``
    (MLflow itself retries for minutes); ConnectionError naming the address and the reason."""
    import sqlalchemy

    if urlsplit(uri).password is not None:
        raise ValueError(
            f"{where(uri)}: the URI carries a password, which any user of the machine can read on the command "
            "line: remove it and put it in a password file (PGPASSFILE, libpq's format, mode 0600)"
        )
    connect_args = {"connect_timeout": max(1, int(timeout_s))} if uri.startswith("postgresql") else {}
    engine = sqlalchemy.create_engine(uri, connect_args=connect_args, poolclass=sqlalchemy.pool.NullPool)
    try:
        with engine.connect():
            pass
    except sqlalchemy.exc.SQLAlchemyError as err:
        hint = ""
        if "password" in str(err).lower():
            hint = " (its password goes in a file named by PGPASSFILE: 127.0.0.1:PORT:DB:USER:PASSWORD, mode 0600)"
        raise ConnectionError(f"the database at {where(uri)} refuses the connection: {first_line(err)}{hint}") from None
    finally:
        engine.dispose()
