"""A private single-node Slurm cluster on this machine (loopback only), for tests and for trying the batch
script without a real cluster. Needs Debian's ``slurm-wlm`` and ``munge`` packages and root (slurmd runs jobs
as their user). Everything lives under one directory: munge key and socket, slurm.conf, state, spool, logs;
the daemons (munged, slurmctld, slurmd) run in the foreground as children of this process and are stopped by
PID. Nothing system-wide is touched: clients find the cluster through ``SLURM_CONF`` only.

    python slurm/local_cluster.py [DIR]     # start, print the SLURM_CONF to export, stop on Ctrl-C

    from local_cluster import LocalSlurm
    with LocalSlurm("/tmp/olbslurm-x") as cluster:
        subprocess.run(["sbatch", ...], env=cluster.env())
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "squeue", "scontrol", "scancel", "sinfo")


# -- process and port helpers (also used by the tests of the Ray cluster) ----------------------------------------
def session_pids(sid: int) -> list[int]:
    """Live PIDs (zombies excluded) whose session id is ``sid``: slurm/ray_node.sh runs each Ray node in a
    session of its own."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


def pids_mentioning(text: str) -> list[int]:
    """PIDs whose command line contains ``text`` (e.g. a job's unique Ray temp dir), this process excluded."""
    out = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:  # a zombie's command line is empty
            if text.encode() in cmdline.read_bytes() and int(cmdline.parent.name) != os.getpid():
                out.append(int(cmdline.parent.name))
        except OSError:
            continue
    return out


def wait_no_leftovers(sids: list[int], marker: str, timeout: float = 45) -> list[int]:
    """Wait until no process of the sessions ``sids`` and none whose command line names ``marker`` exists.
    Returns the leftovers after ``timeout`` (and SIGKILLs them, by PID, so that the machine stays clean)."""
    deadline = time.monotonic() + timeout
    while True:
        left = sorted({p for sid in sids for p in session_pids(sid)} | set(pids_mentioning(marker)))
        if not left or time.monotonic() > deadline:
            break
        time.sleep(1)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def free_port_base(span: int = 400, low: int = 20000, high: int = 30000) -> int:
    """A random block of ``span`` ports (slurm/ray_node.sh's layout) whose ports in use by Ray are free."""
    for _ in range(200):
        base = random.randrange(low, high - span, 10)
        try:
            for off in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 50, 51, 52):
                with socket.socket() as s:
                    s.bind(("", base + off))
            return base
        except OSError:
            continue
    raise RuntimeError(f"no free block of {span} ports in {low}..{high}")


class SlurmUnavailable(RuntimeError):
    """Slurm cannot run here (packages missing, not root, or a daemon does not start); the message says why."""


def missing_tools() -> list[str]:
    paths = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin:/sbin"
    return [t for t in (*DAEMONS, *CLIENTS) if shutil.which(t, path=paths) is None]


def _which(tool: str) -> str:
    return shutil.which(tool, path=os.environ.get("PATH", "") + os.pathsep + "/usr/sbin:/sbin") or tool


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalSlurm:
    """munged + slurmctld + slurmd with a minimal slurm.conf: one node ``localhost`` with every core, one
    partition ``debug``, no accounting, no cgroups (proctrack/linuxproc, task/none)."""

    def __init__(self, root: str | os.PathLike | None = None, cpus: int | None = None, start_timeout: float = 40):
        self.root = Path(root or tempfile.mkdtemp(prefix="olbslurm-", dir="/tmp"))
        self.cpus = cpus or os.cpu_count() or 1
        self.start_timeout = start_timeout
        self.procs: dict[str, subprocess.Popen] = {}
        self.conf = self.root / "slurm.conf"

    # -- lifecycle ----------------------------------------------------------------------------------------
    def start(self) -> LocalSlurm:
        missing = missing_tools()
        if missing:
            raise SlurmUnavailable(
                f"not installed: {' '.join(missing)} (Debian packages slurm-wlm and munge; "
                "bash .ci/slurm_setup.sh installs them)"
            )
        if os.geteuid() != 0:
            raise SlurmUnavailable("a local slurmd must run as root")
        try:
            self._write_files()
            self._start_munge()
            self._spawn("slurmctld", [_which("slurmctld"), "-D", "-f", str(self.conf)])
            self._spawn("slurmd", [_which("slurmd"), "-D", "-N", "localhost", "-f", str(self.conf)])
            self._wait_idle()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Cancel every job of this cluster, wait for them to end, then stop the daemons by PID."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            try:
                subprocess.run(
                    [_which("scancel"), "--user", str(os.getuid())], env=self.env(), timeout=15, capture_output=True
                )
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and self.jobs():
                    time.sleep(1)
            except (OSError, subprocess.SubprocessError):
                pass
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)

    def __enter__(self) -> LocalSlurm:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- clients ------------------------------------------------------------------------------------------
    def env(self, base: dict | None = None, **extra: str) -> dict:
        env = dict(os.environ if base is None else base)
        env["SLURM_CONF"] = str(self.conf)
        for key in [k for k in env if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")) and k != "SLURM_CONF"]:
            del env[key]  # nothing from an enclosing allocation
        env.update(extra)
        return env

    def run(self, *args: str, timeout: float = 30, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(
            [_which(args[0]), *args[1:]],
            env=kw.pop("env", None) or self.env(),
            timeout=timeout,
            capture_output=True,
            text=True,
            **kw,
        )

    def jobs(self) -> list[str]:
        out = self.run("squeue", "-h", "-o", "%i", timeout=15).stdout
        return [line.strip() for line in out.splitlines() if line.strip()]

    def job_state(self, job_id: str) -> str:
        """PENDING, RUNNING, COMPLETING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ... ('' if unknown)."""
        out = self.run("scontrol", "show", "job", "-o", str(job_id), timeout=15).stdout
        for field in out.split():
            if field.startswith("JobState="):
                return field.split("=", 1)[1]
        return ""

    def wait_job(self, job_id: str, timeout: float) -> str:
        """Wait until the job has ended; its final state."""
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            state = self.job_state(job_id)
            if state and state not in ("PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "REQUEUED", "SUSPENDED"):
                return state
            time.sleep(1)
        raise TimeoutError(f"job {job_id} still {state or 'unknown'} after {timeout:g} s")

    def log_tail(self, lines: int = 30) -> str:
        out = []
        for path in sorted((self.root / "log").glob("*")):
            text = path.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"== {path}\n" + "\n".join(text))
        return "\n".join(out)

    # -- internals ----------------------------------------------------------------------------------------
    def _write_files(self) -> None:
        for sub in ("munge", "state", "spool", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        os.chmod(self.root / "munge", 0o755)  # munged: socket dir must be searchable, key dir not writable by others
        key = self.root / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        host = socket.gethostname().split(".")[0]
        mem_mb = 1024
        try:
            mem_mb = min(mem_mb, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20)
        except (ValueError, OSError):
            pass
        r = self.root
        self.conf.write_text(f"""\
# A private single-node cluster written by slurm/local_cluster.py: loopback only, no accounting, no cgroups.
ClusterName=olblocal
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={r}/munge/munge.socket
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
KillWait=30
SchedulerParameters=sched_interval=2
# Job ids (and so the batch script's default Ray ports) differ between local clusters.
FirstJobId={random.randint(1000, 900000)}
NodeName=localhost NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={mem_mb} State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
""")

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.out", "ab")
        self.procs[name] = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        log.close()

    def _start_munge(self) -> None:
        m = self.root / "munge"
        self._spawn(
            "munged",
            [
                _which("munged"),
                "-F",
                f"--key-file={m}/munge.key",
                f"--socket={m}/munge.socket",
                f"--pid-file={m}/munged.pid",
                f"--log-file={self.root}/log/munged.log",
                f"--seed-file={m}/munged.seed",
            ],
        )
        deadline = time.monotonic() + 15
        while not (m / "munge.socket").exists():
            if self.procs["munged"].poll() is not None or time.monotonic() > deadline:
                raise SlurmUnavailable("munged did not start:\n" + self.log_tail())
            time.sleep(0.1)

    def _wait_idle(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        state = ""
        while time.monotonic() < deadline:
            for name in ("slurmctld", "slurmd"):
                if self.procs[name].poll() is not None:
                    raise SlurmUnavailable(
                        f"{name} exited with status {self.procs[name].returncode}:\n" + self.log_tail()
                    )
            try:
                state = self.run("sinfo", "-h", "-N", "-o", "%T", timeout=10).stdout.strip()
            except subprocess.TimeoutExpired:
                state = "timeout"
            if state.startswith("idle"):
                return
            time.sleep(0.5)
        raise SlurmUnavailable(
            f"the node did not become idle within {self.start_timeout:g} s (state {state!r}):\n" + self.log_tail()
        )


def main(argv: list[str]) -> int:
    cluster = LocalSlurm(argv[0] if argv else None)
    try:
        cluster.start()
    except SlurmUnavailable as err:
        print(f"local_cluster: {err}", file=sys.stderr)
        return 1
    print(
        f"local Slurm cluster up ({cluster.cpus} CPUs); in another shell:\n  export SLURM_CONF={cluster.conf}\n"
        "Ctrl-C stops it.",
        flush=True,
    )
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    raise SystemExit(main(sys.argv[1:]))
