"""What another user of the machine could plant, squat or read around Ray: temp folders made by someone else or
open to all are refused by slurm/ray_node.sh before Ray starts, the logs are copied without following a link, a
local grid's temp dir is a fresh private one whatever names others took first, and a node's metrics export does
not answer. The other user is uid 65534 (``setpriv``; the tests run as root, here and in CI)."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from ray_probe import listeners
from support import answers, local_cluster

from olb.grid.auth import private_dir, token_env, write_token
from olb.grid.running.backends.ray_local import fresh_temp_dir, remove_stale_temp_dirs
from olb.grid.running.backends.ray_lost import keep_logs

ROOT = Path(__file__).resolve().parents[1]
RAY_NODE = ROOT / "slurm" / "ray_node.sh"
OTHER = 65534
SECRET = "the victim's secret\n"

second_user = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="acting as a second user (uid 65534) needs root and setpriv",
)


def as_other(*command: str) -> None:
    """Run ``command`` as uid/gid 65534, without root's groups."""
    subprocess.run(
        ["setpriv", "--reuid", str(OTHER), "--regid", str(OTHER), "--clear-groups", *command],
        check=True,
        capture_output=True,
    )


@pytest.fixture
def shared(tmp_path):
    """A short folder open to all with the sticky bit, as /tmp is (Ray's socket paths must stay short), and a
    0600 file of ours the other user must never obtain a copy of."""
    base = Path(tempfile.mkdtemp(prefix="olbsm-", dir="/tmp"))
    base.chmod(0o1777)
    secret = tmp_path / "secret"
    secret.write_text(SECRET)
    secret.chmod(0o600)
    yield base, secret
    shutil.rmtree(base, ignore_errors=True)


def ray_node(*args: str, env: dict | None = None, token: Path) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "SLURM_", "OLB_RAY"))}
    return subprocess.run(
        ["bash", str(RAY_NODE), "head", "--port-base", str(local_cluster.free_port_base()), "--num-cpus", "1",
         "--token-file", str(token), "--python", sys.executable, *args],
        env={**environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip


@pytest.fixture
def token(tmp_path):
    return write_token(private_dir(tmp_path / "auth") / "token")


@second_user
@pytest.mark.parametrize("kind", ["made by another user, open to all", "a link planted by another user"])
def test_ray_node_refuses_a_temp_dir_of_another_user(shared, token, kind):
    base, secret = shared
    planted = base / "ray"
    if kind.startswith("made"):
        as_other("mkdir", "-m", "777", str(planted))
        problem = f"is owned by uid {OTHER}, not by you"
    else:
        as_other("ln", "-s", str(secret.parent), str(planted))
        problem = "is a symbolic link"
    result = ray_node("--temp-dir", str(planted), token=token)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"ray_node.sh: error: --temp-dir '{planted}' {problem}" in result.stderr, result.stderr
    assert "starting Ray" not in result.stdout
    assert planted.is_symlink() or not list(planted.iterdir())  # nothing made in it


@second_user
def test_ray_node_refuses_a_parent_folder_of_another_user(shared, token):
    """OLB_RAY_TMPDIR (the parent of each node's fresh folder) open to another user who could rename it."""
    base, _ = shared
    as_other("mkdir", "-m", "777", str(base / "tmp"))
    result = ray_node(env={"OLB_RAY_TMPDIR": str(base / "tmp")}, token=token)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"'{base / 'tmp'}', the folder of Ray's temp dir, is owned by uid {OTHER}" in result.stderr
    assert not list((base / "tmp").iterdir())


def test_ray_node_refuses_a_temp_dir_of_ones_own_open_to_others(tmp_path, token):
    """No second user needed: one's own folder that others may write to is refused the same way."""
    folder = Path(tempfile.mkdtemp(prefix="olbsm-", dir="/tmp"))
    try:
        folder.chmod(0o777)
        result = ray_node("--temp-dir", str(folder), token=token)
        assert result.returncode == 2, result.stdout + result.stderr
        assert f"--temp-dir '{folder}' is writable by other users (mode 777)" in result.stderr, result.stderr
        assert "starting Ray" not in result.stdout
    finally:
        folder.rmdir()


@second_user
def test_keep_logs_copies_no_file_a_link_points_to(shared, tmp_path):
    """Ray's session folders are open to all: links planted in its logs folder (to a 0600 file of ours, to a
    folder) are neither followed nor copied."""
    base, secret = shared
    session = base / "session_1"
    (session / "logs" / "old").mkdir(parents=True)
    for folder in (session, session / "logs"):
        folder.chmod(0o777)  # as Ray makes them
    (session / "logs" / "raylet.out").write_text("raylet log\n")
    (session / "logs" / "old" / "worker-1.err").write_text("worker log\n")
    as_other("ln", "-s", str(secret), str(session / "logs" / "worker-2.err"))
    as_other("ln", "-s", str(secret.parent), str(session / "logs" / "elsewhere"))
    keep_logs(str(session), tmp_path / "out")
    kept = {
        path.relative_to(tmp_path / "out" / "ray-logs").as_posix(): path
        for path in (tmp_path / "out" / "ray-logs").rglob("*")
    }
    assert sorted(kept) == ["old", "old/worker-1.err", "raylet.out"]
    assert (tmp_path / "out" / "ray-logs" / "raylet.out").read_text() == "raylet log\n"


@second_user
def test_a_local_grids_temp_dir_is_fresh_and_private_whatever_others_made(tmp_path):
    """Another user squatting the names a local grid used to take (/tmp/olb-ray-<pid>, and a few after it)
    neither blocks the grid nor gets its files: its folder is a new one, 0700, ours."""
    pattern = "/tmp/olbsm-ray-{pid}"
    squatted = [Path(pattern.replace("{pid}", str(os.getpid()))), Path(f"/tmp/olbsm-ray-{os.getpid()}-x")]
    for path in squatted:
        as_other("mkdir", "-m", "777", str(path))
    try:
        made = [Path(fresh_temp_dir(pattern)) for _ in range(2)]
        for folder in made:
            info = folder.lstat()
            assert stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o700
            assert folder.name.startswith(f"olbsm-ray-{os.getpid()}-") and folder not in squatted
            folder.rmdir()
        assert made[0] != made[1]
        assert all(path.stat().st_uid == OTHER and not list(path.iterdir()) for path in squatted)
    finally:
        for path in squatted:
            shutil.rmtree(path, ignore_errors=True)


def _temp_dir(base: Path, pid: int, suffix: str, mode: int = 0o700) -> Path:
    """A local grid's temp dir as process ``pid`` would have made it in ``base``, with a token."""
    path = base / f"olb-ray-{pid}-{suffix}"
    path.mkdir()
    (path / "ray_token").write_text("0" * 64)
    path.chmod(mode)
    return path


@second_user
def test_temp_dirs_left_by_killed_grids_are_removed_and_no_other(shared):
    """A local grid killed outright leaves its temp dir (its token in it); the next one removes those whose
    process has ended, and only those that are the user's own, private, no link, and that no process names."""
    base, secret = shared
    pattern = f"{base}/olb-ray-{{pid}}"
    ended = subprocess.Popen(["true"])
    ended.wait()
    running = subprocess.Popen(["sleep", "60"])
    try:
        stale = _temp_dir(base, ended.pid, "k3v9x1_q")
        kept = [_temp_dir(base, running.pid, "alive"), _temp_dir(base, ended.pid, "open", 0o755)]
        kept.append(base / f"olb-ray-{ended.pid}-link")
        kept[2].symlink_to(secret.parent)
        as_other("mkdir", "-m", "700", str(base / f"olb-ray-{ended.pid}-theirs"))
        kept.append(base / f"olb-ray-{ended.pid}-theirs")
        named = _temp_dir(base, ended.pid, "named")  # a process still uses it (Ray's processes name their folder)
        user = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(named)])
        try:
            deadline = time.monotonic() + 10  # its command line reads empty for a moment while it starts
            while str(named).encode() not in Path(f"/proc/{user.pid}/cmdline").read_bytes():
                assert time.monotonic() < deadline, "the process naming the folder did not start"
                time.sleep(0.01)
            assert remove_stale_temp_dirs(pattern) == [stale]
            made = Path(fresh_temp_dir(pattern))  # the next grid: removes what is stale, makes its own
        finally:
            user.kill()
            user.wait()
        assert not stale.exists() and all(path.exists() or path.is_symlink() for path in [*kept, named, made])
        assert secret.read_text() == SECRET
    finally:
        running.kill()
        running.wait()


@pytest.mark.slow
@pytest.mark.e2e
def test_a_ray_node_is_private_exports_no_metrics_and_keeps_its_logs_without_links(tmp_path, token):
    """A head on 127.0.0.2 (Ray then binds every interface) in an existing private --temp-dir: Ray's folder is a
    fresh 0700 one inside it (Ray's own, 0777, below that), the metrics export port answers nowhere, every port is in the node's range, and the
    stop copies links planted in Ray's logs as links, never the file they point to."""
    parent = Path(tempfile.mkdtemp(prefix="olbsm-", dir="/tmp"))
    parent.chmod(0o755)  # ours, writable by nobody else: accepted
    base = local_cluster.free_port_base()
    secret = tmp_path / "secret"
    secret.write_text(SECRET)
    secret.chmod(0o600)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "SLURM_", "OLB_RAY"))}
    log = open(tmp_path / "node.log", "wb")
    node = subprocess.Popen(
        ["bash", str(RAY_NODE), "head", "--port-base", str(base), "--node-ip", "127.0.0.2", "--num-cpus", "1",
         "--temp-dir", str(parent), "--python", sys.executable, "--log-dir", str(tmp_path / "logs"),
         "--pid-file", str(tmp_path / "pid")],
        env={**environ, **token_env(token)},
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    log.close()
    try:
        deadline = time.monotonic() + 120
        while not (answers(f"127.0.0.2:{base}") and answers(f"127.0.0.2:{base + 6}")):  # the GCS, the last agent
            assert node.poll() is None and time.monotonic() < deadline, (tmp_path / "node.log").read_text()
            time.sleep(0.5)
        (ray_dir,) = parent.iterdir()
        info = ray_dir.lstat()
        assert ray_dir.name.startswith("r.") and info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o700
        sessions = list(ray_dir.glob("ray/session_2*"))
        assert sessions, list(ray_dir.rglob("*"))
        sid = int((tmp_path / "pid").read_text())
        sockets = listeners(set(local_cluster.session_pids(sid)))
        ports = {int(address.rsplit(":", 1)[1]) for address, _ in sockets}
        assert any(name.startswith("ray::Dashboard") for _, name in sockets), sockets  # the agent is up
        assert ports and all(base <= port < base + 400 for port in ports), sockets
        assert not any(answers(f"{host}:{base + 7}") for host in ("127.0.0.1", "127.0.0.2")), sockets  # metrics off
        logs = sessions[0] / "logs"
        (logs / "worker-9.err").symlink_to(secret)  # what another user could plant if the folder were reachable
        (logs / "elsewhere").symlink_to(tmp_path)
    finally:
        os.killpg(node.pid, signal.SIGTERM)
        node.wait(timeout=60)
        left = list(parent.iterdir())
        shutil.rmtree(parent, ignore_errors=True)
    kept = tmp_path / "logs" / subprocess.run(["hostname", "-s"], capture_output=True, text=True).stdout.strip()
    assert (kept / "raylet.out").is_file(), (tmp_path / "node.log").read_text()
    assert (kept / "worker-9.err").is_symlink() and (kept / "elsewhere").is_symlink()
    copied = [path for path in kept.rglob("*") if path.is_file() and not path.is_symlink()]
    assert all(SECRET not in path.read_text(errors="replace") for path in copied)
    assert left == []  # Ray's folder removed with the node
