"""Who may talk to a Ray olb starts: token authentication on every Ray, and a local Ray on loopback only.

Every Ray cluster olb starts (the grid's local Ray, ``slurm/ray_node.sh``, ``slurm/olb_grid.sbatch``) runs with
Ray's token authentication (``RAY_AUTH_MODE=token``): every gRPC and HTTP request to it must carry the cluster's
token, a fresh random one per cluster, kept in a file only its user can read (0600, in a directory that is 0700
or the job's own). Ray reads it from ``RAY_AUTH_TOKEN_PATH``; the token itself never appears in an environment
or on a command line. A local Ray also advertises and binds 127.0.0.1 only (Ray's own switch for that,
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, which keeps a one-machine Ray off the network), and exports no metrics
(``RAY_enable_metrics_collection=0``: Ray's metrics server would answer without the token).

Tokens and credentials live in private files (:func:`write_private`, :func:`read_private`: 0600, this user's,
never through a link). ``python -m olb.grid.auth new-token FILE`` writes a fresh token to FILE (for the shell scripts).
"""

from __future__ import annotations

import os
import secrets
import stat
import sys
from pathlib import Path

TOKEN_FILE = "ray_token"
LOOPBACK = "127.0.0.1"
# RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0: Ray takes 127.0.0.1 as the node's address instead of the host's and binds
# its servers to it (what it does by default on macOS and Windows).
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
# Ray's metrics export (a Prometheus server on each node) answers without the token: off (the raylet then starts
# the dashboard agent without it). slurm/ray_node.sh sets the same.
METRICS_OFF_ENV = {"RAY_enable_metrics_collection": "0"}
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def private_dir(path: str | os.PathLike) -> Path:
    """``path`` created (with parents) as a directory only this user can enter; an existing one must already
    be this user's and closed to others, else PermissionError naming it."""
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(
            f"{path} must be a directory owned by uid {os.getuid()} with mode 0700 "
            f"(it is uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}); remove it or choose another"
        )
    return path


def write_private(path: Path, text: str) -> Path:
    """``text`` in ``path``, mode 0600, not through a link; an older file there is replaced."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def read_private(path: Path) -> str:
    """The text of ``path``, a regular file of this user that no one else may read; else PermissionError."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW)
    except OSError as err:
        raise PermissionError(f"{path}: cannot open it ({err.strerror}; a link is not followed)") from None
    with os.fdopen(fd) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise PermissionError(
                f"{path} must be a regular file owned by uid {os.geteuid()} that only its owner can read "
                f"(it is uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}): chmod 600 {path}"
            )
        return f.read()


def write_token(path: str | os.PathLike) -> Path:
    """A fresh random token (256 bits) in ``path``, mode 0600; an older file there is replaced."""
    return write_private(Path(path), secrets.token_hex(32))


def token_env(token_path: str | os.PathLike, loopback: bool = False) -> dict[str, str]:
    """The environment a Ray process (node, driver or worker) needs to join a cluster whose token is in
    ``token_path``; ``loopback``: the cluster is one machine on 127.0.0.1."""
    env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_path)}
    return {**env, **LOOPBACK_ENV} if loopback else env


class LocalRayAuth:
    """A local Ray's token and environment: :meth:`apply` writes a fresh token into ``directory`` (made
    private) and sets this process's environment (inherited by the Ray processes it starts); :meth:`restore`
    puts the environment back as it was."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self.token_path = self.directory / TOKEN_FILE
        self._saved: dict[str, str | None] = {}

    def apply(self) -> LocalRayAuth:
        write_token(private_dir(self.directory) / TOKEN_FILE)
        env = {**token_env(self.token_path, loopback=True), **METRICS_OFF_ENV}
        self._saved = {key: os.environ.get(key) for key in (*env, "RAY_AUTH_TOKEN")}
        os.environ.pop("RAY_AUTH_TOKEN", None)  # a token in the environment would win over the file
        os.environ.update(env)
        _reload_ray_auth()
        return self

    def restore(self) -> None:
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved = {}
        _reload_ray_auth()


def _reload_ray_auth() -> None:
    """Make an already imported Ray read these settings again: it caches the authentication mode and token
    per process (a second local Ray in one process has a new token) and reads LOOPBACK_ENV once, at import."""
    if "ray" not in sys.modules:
        return
    from ray._common.utils import env_bool
    from ray._private import ray_constants
    from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()
    # as ray_constants defines it
    ray_constants.ENABLE_RAY_CLUSTER = env_bool(
        ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR, not ray_constants.IS_WINDOWS_OR_OSX
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "new-token":
        print("usage: python -m olb.grid.auth new-token FILE", file=sys.stderr)
        return 2
    path = Path(argv[1])
    if not path.parent.is_dir():
        print(f"olb.grid.auth: error: the directory of {path} does not exist", file=sys.stderr)
        return 2
    print(write_token(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
