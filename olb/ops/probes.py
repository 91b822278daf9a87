"""What the tracking service (:mod:`olb.ops.serve`) asks of the machine: a free port, PostgreSQL's programs, and
whether its servers answer."""

from __future__ import annotations

import glob
import os
import shutil
import socket
from pathlib import Path


class ServiceError(RuntimeError):
    """The tracking service could not be started or stopped; the message says why and what to do."""


def free_port() -> int:
    """A TCP port of 127.0.0.1 that no one listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_bin(name: str) -> str:
    """A PostgreSQL program: on the PATH, else in Debian's newest ``/usr/lib/postgresql/N/bin``."""
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(Path(p).parts[-3]))
    if not versions:
        raise ServiceError(
            f"PostgreSQL's {name} is not installed (Debian: apt-get install postgresql; "
            "or put its bin folder on the PATH)"
        )
    return versions[-1]


def pg_env() -> dict[str, str]:
    """PostgreSQL's processes get no secret: only a path and a locale."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}


def pg_ready(dsn: str) -> bool:
    """Whether PostgreSQL accepts a login; ServiceError when it refuses the password."""
    import psycopg

    try:
        psycopg.connect(dsn).close()
    except psycopg.OperationalError as err:
        if "password authentication failed" in str(err):
            raise ServiceError(f"PostgreSQL refuses the password in the passfile: {str(err).strip()}") from None
        return False
    return True


def http_ok(url: str) -> bool:
    """Whether ``url`` answers 200 within 2 s."""
    import requests

    try:
        return requests.get(url, timeout=2).ok
    except requests.RequestException:
        return False
