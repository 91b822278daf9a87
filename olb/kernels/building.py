"""A missing build of olb's kernels, made: by this process (``python -m olb.kernels`` in a subprocess, announced
on stderr, with the time this machine is expected to take) or, while it waits (bounded), by another that holds
the lock; a build that cannot be made on this machine is remembered, for this toolchain, and told once."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from olb.kernels.loading import verified
from olb.kernels.lock import NOFOLLOW, BuildLock, read_nofollow

BUILD_TIMEOUT_S = 1800.0  # the build (numba, then a C compiler) took 13-158 s on a 2-core machine, loaded or not
LOCK_TIMEOUT_S = BUILD_TIMEOUT_S + 60.0  # a process waiting for another's build
HEARTBEAT_S = 10.0  # a build refreshes its lock this often
BUILD_TIMES = "last-build.json"  # beside the builds: the last one's seconds, which tell the next its expected time
JIT_COST = "numba's JIT runs them instead (the same results, about 110 MB more per process)"

# What this process did to make the kernels ready: the seconds it spent building them, why it runs the JIT.
STATE: dict[str, Any] = {"built_s": 0.0, "jit_because": None}


class KernelsUnavailable(RuntimeError):
    """The extension cannot be had on this machine (the reason was told once, and is remembered)."""


def tell(message: str) -> None:
    """One line on stderr, where a user sees it (also under a grid's progress line)."""
    try:
        print(f"olb: {message}", file=sys.stderr, flush=True)
    except (OSError, ValueError):  # no stderr (closed, or a broken pipe): nothing to tell, nothing to fail
        pass


def built(folder: Path) -> dict:
    """The verified manifest of ``folder``'s build, made by this process or, while it waits (bounded), by
    another; `KernelsUnavailable` where it cannot be built on this machine."""
    failure = remembered_failure(folder)
    if failure is not None:
        raise KernelsUnavailable(failure)
    missing = [name for name, path in compilers().items() if path is None]
    if missing:
        remember_failure(
            folder,
            f"no C/C++ compiler ({', '.join(missing)} not found): install one (Debian/Ubuntu: "
            "`apt-get install build-essential`; Fedora: `dnf install gcc gcc-c++`), or set OLB_KERNELS=jit",
        )
    lock = BuildLock(folder.with_name(f"{folder.name}.lock"))
    started = time.monotonic()
    deadline, told = started + LOCK_TIMEOUT_S, None
    while not lock.take():
        manifest = verified(folder, warn=False)
        if manifest is not None:
            if told is not None:
                tell(
                    f"olb's kernels are ready (compiled by another process; waited {time.monotonic() - started:.0f} s)"
                )
            return manifest
        failure = remembered_failure(folder)
        if failure is not None:  # the other process's build failed (and it said why)
            raise KernelsUnavailable(failure)
        if lock.stale():
            lock.break_stale()
            continue
        if time.monotonic() > deadline:
            raise RuntimeError(f"waited {LOCK_TIMEOUT_S:.0f} s for another process's build ({lock.path})")
        if told is None:
            tell(
                f"waiting for olb's kernels, being compiled by {lock.holder_text()} ({_expected_text(folder.parent)})..."
            )
            told = time.monotonic()
        elif time.monotonic() - told >= HEARTBEAT_S:
            tell(f"still waiting for olb's kernels: {time.monotonic() - started:.0f} s")
            told = time.monotonic()
        time.sleep(0.5)
    try:
        manifest = verified(folder, warn=False)  # another process's build, finished while this one waited
        if manifest is None:
            try:
                run_build(folder, lock)
            except (OSError, RuntimeError, subprocess.SubprocessError) as error:
                remember_failure(folder, f"the build failed ({error}); `python -m olb.kernels` retries it")
            manifest = verified(folder)
    finally:
        lock.release()
    if manifest is None:
        raise RuntimeError(f"no verified build in {folder} after building it")
    return manifest


def compilers() -> dict[str, str | None]:
    """The C and C++ compilers the build calls (``$CC``, ``$CXX``, else Python's own), each with its path
    (``None``: not found). Empty off POSIX, where the build finds its compiler itself."""
    if os.name != "posix":
        return {}
    import sysconfig

    found = {}
    for variable, default in (("CC", "cc"), ("CXX", "c++")):
        name = shlex.split(os.environ.get(variable) or sysconfig.get_config_var(variable) or default)[0]
        found[name] = shutil.which(name)
    return found


def _failure_marker(folder: Path) -> Path:
    """Where a failed build is remembered: keyed by the kernels' key and the compilers (their paths, sizes and
    times), so that installing or changing a compiler retries."""
    toolchain = {}
    for name, path in compilers().items():
        info = os.stat(path) if path else None
        toolchain[name] = [path, info.st_size, info.st_mtime_ns] if info else None
    digest = hashlib.sha256(json.dumps(toolchain, sort_keys=True).encode()).hexdigest()[:12]
    return folder.with_name(f"{folder.name}.failed-{digest}")


def remembered_failure(folder: Path) -> str | None:
    try:
        return read_nofollow(_failure_marker(folder)).decode(errors="replace").strip() or "an earlier build failed"
    except OSError:
        return None


def remember_failure(folder: Path, reason: str) -> None:
    """Remember ``reason`` for this machine and toolchain; the one process that records it tells it (one line);
    raise `KernelsUnavailable`."""
    message = f"olb's compiled kernels cannot be built here: {reason}. {JIT_COST}"
    try:
        fd = os.open(_failure_marker(folder), os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
    except FileExistsError:  # another process recorded (and told) it
        raise KernelsUnavailable(remembered_failure(folder) or message) from None
    except OSError:  # a folder that cannot be written: told by every process, the best it can do
        fd = None
    if fd is not None:
        with os.fdopen(fd, "w") as marker:
            marker.write(message)
    tell(f"{message} (told once per machine: {_failure_marker(folder).name} in {folder.parent})")
    raise KernelsUnavailable(message)


def run_build(folder: Path, lock: BuildLock) -> None:
    """``python -m olb.kernels --out folder`` in a subprocess, so the compiler's memory is not this process's; it
    imports this very olb (its folder first on ``PYTHONPATH``) and refuses if its sources give another key. The
    lock is refreshed while it runs; a line on stderr when it starts and when it ends."""
    command = [sys.executable, "-m", "olb.kernels", "--out", str(folder), "--key", folder.name]
    path = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")]))
    tell(
        f"compiling olb's kernels for this machine (once; {_expected_text(folder.parent)}; OLB_KERNELS=jit skips it)..."
    )
    started, cpu_before = time.perf_counter(), _children_cpu_s()
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
    )
    while True:
        try:
            _, errors = process.communicate(timeout=HEARTBEAT_S)
            break
        except subprocess.TimeoutExpired:
            if time.perf_counter() - started > BUILD_TIMEOUT_S:
                process.kill()
                process.communicate()
                raise RuntimeError(f"the build took more than {BUILD_TIMEOUT_S:.0f} s") from None
            lock.refresh()
            tell(f"compiling olb's kernels: {time.perf_counter() - started:.0f} s")
    if process.returncode != 0:
        tail = " / ".join(line.strip() for line in errors.strip().splitlines()[-4:] if line.strip())
        raise RuntimeError(f"`{' '.join(command[1:])}` failed (exit {process.returncode}): {tail}")
    STATE["built_s"] = time.perf_counter() - started
    cpu_s = _children_cpu_s() - cpu_before
    record_build(folder.parent, STATE["built_s"], cpu_s)
    tell(f"compiled olb's kernels in {STATE['built_s']:.1f} s ({cpu_s:.1f} CPU s; {folder})")


def _children_cpu_s() -> float:
    """CPU seconds of this process's ended children (and theirs: the build's compilers)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def expected_build_s(root: Path) -> tuple[float, str] | None:
    """The seconds a build is expected to take on this machine now, and what they rest on: the last build's CPU
    seconds (``root``'s ``BUILD_TIMES``), stretched by the load, since the build runs one process at a time and
    gets a CPU's share of ``cpus / (load + 1)`` once the machine is busier than its CPUs. None before any build."""
    try:
        cpu_s = float(json.loads(read_nofollow(root / BUILD_TIMES))["cpu_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    why = f"the last build's {cpu_s:.0f} CPU s, at load {load:.1f} on {cpus} CPU(s)"
    return cpu_s * max(1.0, (load + 1) / cpus), why


def _expected_text(root: Path) -> str:
    expected = expected_build_s(root)
    if expected:
        return f"~{expected[0]:.0f} s expected: {expected[1]}"
    return f"no earlier build here to time it by; load {os.getloadavg()[0]:.1f} on {os.cpu_count() or 1} CPU(s)"


def record_build(root: Path, wall_s: float, cpu_s: float) -> None:
    """Keep a build's seconds for the next one's :func:`expected_build_s` (written whole, never through a link)."""
    record = {"wall_s": round(wall_s, 1), "cpu_s": round(cpu_s, 1), "load": round(os.getloadavg()[0], 1)}
    fd, staged = tempfile.mkstemp(prefix=".last-build-", dir=root)
    try:
        with os.fdopen(fd, "w") as file:
            json.dump({**record, "cpus": os.cpu_count()}, file)
        os.replace(staged, root / BUILD_TIMES)
    except OSError:  # a read-only cache keeps its builds: the next is told no expected time
        Path(staged).unlink(missing_ok=True)
