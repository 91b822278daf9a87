"""MLflow on a database server (``tracking.uri=postgresql://USER@HOST:PORT/DB``): the driver writes its cells
straight into the database an MLflow server serves (:mod:`olb.grid.recording.tracking_sql`: a batch of cells per
transaction), while the server serves the UI and every other client from the same tables.

The password never travels in the URI (a command line anyone on the machine may read): libpq reads it from
``PGPASSFILE`` (or ``~/.pgpass``), a file only its owner may read. A URI that carries one is refused, and so is a
database that does not answer or refuses the login, in seconds and before any work, naming the address and
why. One that stops answering during the grid ends it like a lost tracking server (exit 4), within
``tracking.timeout_s``: every connection olb opens has that connect time-out, statement time-out and TCP user
time-out (unacknowledged data), and TCP keepalives (:data:`KEEPALIVE`: a peer gone silent is dropped after
about 25 s); and a server that stopped without closing its sockets (its kernel still
acknowledges them) is caught by the deadline of every call (:mod:`olb.grid.recording.tracking`). A parameter
already in the URI's query is kept as given.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit

from olb.grid.recording.tracking import MlflowTracker, first_line

# What psycopg/SQLAlchemy say of a database that is gone (or refuses the login)
UNREACHABLE = (
    "connection refused",
    "connection failed",
    "could not connect",
    "server closed the connection",
    "terminating connection",
    "connection timeout",
    "connection timed out",
    "timeout expired",
    "statement timeout",
)
# TCP keepalives: the first probe after 10 idle seconds, then one every 5 s, 3 unanswered end the connection
KEEPALIVE = {"keepalives": "1", "keepalives_idle": "10", "keepalives_interval": "5", "keepalives_count": "3"}


class MlflowDatabaseTracker(MlflowTracker):
    """MLflow's tables in a database server, written by the driver directly."""

    unreachable = UNREACHABLE
    bounded = True

    def _store_uri(self, uri: str, timeout_s: float) -> str:
        return bounded_uri(uri, timeout_s)

    def _connect(self, timeout_s: float) -> None:
        check_database(self.uri, self.store_uri)

    def store_name(self) -> str:
        return f"the tracking database at {where(self.uri)}"


def where(uri: str) -> str:
    """``host:port/database`` of a database URI (what messages name; never a password).

    >>> where("postgresql://mlflow@127.0.0.1:5432/mlflow")
    '127.0.0.1:5432/mlflow'
    """
    parts = urlsplit(uri)
    return f"{parts.hostname}:{parts.port or ''}{parts.path}"


def bounded_uri(uri: str, timeout_s: float) -> str:
    """``uri`` with libpq's connect, statement and TCP user time-outs of ``timeout_s`` and TCP keepalives, except
    those its query already sets.

    >>> bounded_uri("postgresql://mlflow@127.0.0.1:5432/mlflow?connect_timeout=3", 30)
    'postgresql://mlflow@127.0.0.1:5432/mlflow?connect_timeout=3&tcp_user_timeout=30000&options=-c+statement_timeout%3D30000&keepalives=1&keepalives_idle=10&keepalives_interval=5&keepalives_count=3'
    """
    parts = urlsplit(uri)
    given = dict(parse_qsl(parts.query))
    ms = str(int(timeout_s * 1000))
    bounds = {
        "connect_timeout": str(max(1, int(timeout_s))),
        "tcp_user_timeout": ms,
        "options": f"-c statement_timeout={ms}",
        **KEEPALIVE,
    }
    query = {**given, **{key: value for key, value in bounds.items() if key not in given}}
    return parts._replace(query=urlencode(query)).geturl()


def check_database(uri: str, store_uri: str) -> None:
    """Refuse a URI with a password in it, and a database that does not take a connection within the connect
    time-out of ``store_uri`` (``uri`` with its time-outs; MLflow itself retries for minutes); ConnectionError
    naming the address and the reason."""
    import sqlalchemy

    if urlsplit(uri).password is not None:
        raise ValueError(
            f"{where(uri)}: the URI carries a password, which any user of the machine can read on the command "
            "line: remove it and put it in a password file (PGPASSFILE, libpq's format, mode 0600)"
        )
    engine = sqlalchemy.create_engine(store_uri, poolclass=sqlalchemy.pool.NullPool)
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
