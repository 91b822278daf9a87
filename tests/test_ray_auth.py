"""A local Ray started by the grid is private: a fresh temp dir only the user can enter (a name another user took
first neither blocks nor serves it), a fresh token in a file only the user can read, every Ray process listening
on loopback only, no metrics export, an outsider without the token refused, and the grid completing on it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from ray_probe import descendants, listeners, on_loopback, outsiders

from olb.grid import compose, run_grid
from olb.grid.auth import LOOPBACK_ENV, TOKEN_FILE, private_dir, write_token
from olb.grid.running.backends import LocalRayBackend
from olb.grid.planning.config import BackendConfig


def test_token_file_is_fresh_and_private(tmp_path):
    d = private_dir(tmp_path / "a" / "b")
    first = write_token(d / TOKEN_FILE).read_text()
    second = write_token(d / TOKEN_FILE).read_text()
    assert len(first) == 64 and first != second  # 256 random bits, new each time
    assert stat.S_IMODE(d.stat().st_mode) == 0o700 and stat.S_IMODE((d / TOKEN_FILE).stat().st_mode) == 0o600
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o755)
    open_dir.chmod(0o755)
    with pytest.raises(PermissionError, match="mode 0700"):
        private_dir(open_dir)


@pytest.mark.e2e
def test_local_ray_is_private_and_the_grid_runs_on_it(tmp_path):
    import ray

    if ray.is_initialized():
        pytest.skip("a Ray is already running in this process")
    squatted = Path(f"/tmp/olba-{os.getpid()}")  # the name a grid of this pid took before: another user's now
    if os.geteuid() == 0 and shutil.which("setpriv"):
        subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "mkdir", "-m", "777",
                        str(squatted)], check=True)  # fmt: skip
    backend = LocalRayBackend(BackendConfig(num_cpus=2, temp_dir="/tmp/olba-{pid}"))
    environ = dict(os.environ)
    backend.start()
    try:
        temp = backend._auth.directory
        token = temp / TOKEN_FILE
        assert temp.name.startswith(f"olba-{os.getpid()}-") and temp != squatted, temp
        assert temp.stat().st_uid == os.getuid() and stat.S_IMODE(temp.stat().st_mode) == 0o700
        assert stat.S_IMODE(token.stat().st_mode) == 0o600 and list(temp.glob("ray/session_2*"))  # Ray's below
        assert os.environ["RAY_AUTH_MODE"] == "token" and os.environ["RAY_AUTH_TOKEN_PATH"] == str(token)
        address = ray.get_runtime_context().gcs_address
        assert address.startswith("127.0.0.1:"), address
        ray.get(ray.remote(lambda: None).remote())  # a worker process is up, and listening
        sockets = listeners(descendants(os.getpid()))
        names = {name for _, name in sockets}
        assert {"gcs_server", "raylet"} <= names, sockets
        assert all(on_loopback(addr) for addr, _ in sockets), sockets  # nothing on another interface
        # Ray's metrics export answers without the token: off (Ray records its port as -1)
        assert ray._private.worker._global_node.metrics_export_port == -1
        wrong = "0" * 64
        results = outsiders(
            address,
            LOOPBACK_ENV,  # no token at all
            {**LOOPBACK_ENV, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": wrong},
        )
        for code, out in results:
            assert code == 3 and "REFUSED" in out and "uid=" not in out, out
        assert any("Authentication token is missing or incorrect" in out for _, out in results), results
        grid = ["seeds=2", "imports=[olb.ops.testing]", "algorithms=[_grid_stub]", "tracking=off", "plots=false"]
        o = run_grid(compose([*grid, "backend=ray"]), tmp_path)
        assert o.exit_code == 0 and len(o.cells) == 2 and (o.cells["status"] == "FINISHED").all()
    finally:
        backend.stop()
        shutil.rmtree(squatted, ignore_errors=True)
    assert not temp.exists()  # token, sockets and session logs removed with the Ray that used them
    for key in ("RAY_AUTH_TOKEN_PATH", *LOOPBACK_ENV):  # no pointer left to the removed token
        assert os.environ.get(key) == environ.get(key), key
