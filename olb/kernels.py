"""olb's compiled kernels, built ahead of time once per user and machine, so that the processes that run cells
load neither numba nor LLVM.

The kernels are the numba functions declared with ``@kernel`` (:mod:`olb.kernel_declarations`: their argument
types are their annotations; the modules that declare them are found by their source, not listed). ``python -m
olb.kernels`` compiles them, with numba's own compiler for this machine's processor, into one extension module
(``numba.pycc``) in the per-user cache
(``$OLB_KERNELS_DIR/<key>/``, by default ``<cache dir>/kernels/<key>/``, :func:`olb.cache.cache_dir`). A process
then imports only that module: the same machine code numba's JIT would make, without numba's typing tables and
LLVM's compiler, about 110 MB per process (``docs/speed.md``). :func:`kernels` returns a module's functions from
the extension, building it first when it is missing: in a subprocess, announced on stderr (a line when it starts,
with the time this machine is expected to take, derived from the last build's CPU seconds and the load now; one
every ``HEARTBEAT_S`` while it runs; one when it ends, with its time), by one process at a time (:class:`BuildLock`, safe on a folder shared over NFS
by several machines), into a private folder renamed into place whole.

``OLB_KERNELS`` picks how kernels are run:

* ``aot`` (the default): the extension, built if missing. Where it cannot be built (no C compiler, say) one line
  on stderr names the reason and the fix, and the process runs numba's JIT instead; the failure is remembered
  in the kernels' folder for this toolchain, so other processes neither retry nor repeat it (a new compiler, or
  ``python -m olb.kernels``, retries).
* ``jit``: numba's JIT, as when developing a kernel (an edited kernel module changes the key, so ``aot`` would
  rebuild the whole extension after every edit).

Both run the same numba code and give the same results bit for bit (``tests/test_kernels.py``). The key
covers the source of the modules that declare kernels and records, this file and :mod:`olb.kernel_declarations`,
the Python, numpy, numba and llvmlite versions and the processor's name and features; the extension's SHA-256 is recorded beside it and checked on every load, and
nothing is read from a folder another user could write (:mod:`olb.cache`). Arguments are checked before every
call (dtype, dimensions, C order; a record's class, its fields checked when it is made), since the extension
itself checks only the item size. The time spent building, loading or (under the JIT) compiling kernels is counted in
:data:`LOADING`, which a cell's ``compile_s`` holds.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib
import importlib.machinery
import importlib.util
import json
import os
import platform
import shlex
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from olb.cache import (
    CacheFolderError,
    CacheWarning,
    cache_location,
    check_cache_folders,
    check_folder,
    private_cache,
    private_dir,
)
from olb import kernel_declarations as declarations
from olb.kernel_declarations import (
    DTYPES,
    KERNELS,
    PACKAGE,
    RECORDS,
    ArgumentType,
    argument_spec,
    declaring_modules,
    describe,
    kernel_modules,
    record_types,
)

MODES = ("aot", "jit")
EXTENSION = "olb_kernels"
BUILD_TIMEOUT_S = 1800.0  # the build (numba, then a C compiler) took 13-158 s on a 2-core machine, loaded or not
LOCK_TIMEOUT_S = BUILD_TIMEOUT_S + 60.0  # a process waiting for another's build
HEARTBEAT_S = 10.0  # a build refreshes its lock this often
STALE_AFTER_S = 120.0  # a lock left unrefreshed this long, as watched by a waiting process, is a dead build's
BUILD_TIMES = "last-build.json"  # beside the builds: the last one's seconds, which tell the next its expected time
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_JIT_COST = "numba's JIT runs them instead (the same results, about 110 MB more per process)"

# scipy functions the kernels call by symbol (``types.ExternalFunction``): the extension defines each symbol as a
# call through a pointer, set on load to scipy's own function (``scipy.special.cython_special``).
SCIPY_SYMBOLS = {"olb_scipy_ndtr": "__pyx_fuse_1ndtr", "olb_scipy_expit": "__pyx_fuse_0expit"}
_SHIM = "".join(
    f"double (*{symbol}_target)(double) = 0;\ndouble {symbol}(double x) {{ return {symbol}_target(x); }}\n"
    for symbol in SCIPY_SYMBOLS
)


def mode() -> str:
    """``OLB_KERNELS`` (``aot`` unless set), checked."""
    chosen = os.environ.get("OLB_KERNELS", "aot")
    if chosen not in MODES:
        raise ValueError(f"OLB_KERNELS={chosen!r}: allowed {', '.join(MODES)}")
    return chosen


class KernelModule:
    """A module's kernels (its ``@kernel`` functions), loaded on first use: ``vfdt_core = KernelModule(
    "olb.weak.vfdt_core")`` at import time costs nothing; ``vfdt_core.route(...)`` loads them all."""

    def __init__(self, module: str) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Callable:
        if name.startswith("__"):
            raise AttributeError(name)
        functions = kernels(self._module)
        self.__dict__.update(functions)
        if name not in functions:
            raise AttributeError(f"{self._module} declares no kernel {name!r} (its kernels: {', '.join(functions)})")
        return functions[name]


# Seconds (wall, CPU) this process spent building, loading and (numba's JIT) compiling kernels, left out of a
# cell's timings (``olb.protocol.Stopwatch``).
LOADING = [0.0, 0.0]
_IN_KERNELS = [0]  # kernels() calls under way: their whole time is counted, numba's compiling within them not twice
# What this process did to make the kernels ready: the seconds it spent building them, why it runs the JIT.
STATE: dict[str, Any] = {"built_s": 0.0, "jit_because": None}


def kernels(module: str) -> dict[str, Callable]:
    """The kernels ``module`` declares, from the extension (``aot``) or numba's JIT (``jit``, or where the
    extension could not be built; a line on stderr says why, once per machine)."""
    started = time.perf_counter(), time.process_time()
    _IN_KERNELS[0] += 1
    try:
        if module not in kernel_modules():  # found by reading olb's sources, once per process
            raise ValueError(f"{module!r} is not a kernel module; they are: {', '.join(kernel_modules())}")
        if mode() == "aot":
            extension = _extension()
            if extension is not None:
                return extension[module]
        return _jit(module)
    finally:
        _IN_KERNELS[0] -= 1
        LOADING[0] += time.perf_counter() - started[0]
        LOADING[1] += time.process_time() - started[1]


def ready() -> dict[str, Any]:
    """Make this process's kernels ready now (the extension built where missing, and loaded): what was done, for
    a node's warm-up before a grid's cells (``olb.grid.running.backends.ray_nodes``)."""
    started = time.perf_counter()
    chosen = mode()
    if chosen == "aot" and _extension() is None:
        chosen = "jit"
    elif chosen == "jit":
        STATE["jit_because"] = "OLB_KERNELS=jit"
    return {"mode": chosen, "key": build_key(), "seconds": time.perf_counter() - started, **STATE}


@cache
def _jit(module: str) -> dict[str, Callable]:
    check_folders()  # numba's cache is pickle
    importlib.import_module(module)
    count_numba_compiling()
    return {name: declared.function for name, declared in KERNELS.get(module, {}).items()}


@cache
def count_numba_compiling() -> None:
    """From now on the time numba holds its compiler lock (compiling a function, or loading it from numba's disk
    cache) counts in :data:`LOADING`, nested locks once. Imports numba; registered once per process."""
    from numba.core import event

    class CompilerLockListener(event.Listener):
        depth, since = 0, (0.0, 0.0)

        def on_start(self, numba_event) -> None:
            if self.depth == 0:
                self.since = (time.perf_counter(), time.process_time())
            self.depth += 1

        def on_end(self, numba_event) -> None:
            self.depth -= 1
            if self.depth == 0 and not _IN_KERNELS[0]:
                LOADING[0] += time.perf_counter() - self.since[0]
                LOADING[1] += time.process_time() - self.since[1]

    event.register("numba:compiler_lock", CompilerLockListener())


class KernelsUnavailable(RuntimeError):
    """The extension cannot be had on this machine (the reason was told once, and is remembered)."""


@cache
def _extension() -> dict[str, dict[str, Callable]] | None:
    """The extension's functions per kernel module, built first where missing; ``None`` where it cannot be built
    or loaded (the JIT runs the kernels instead). A refused cache folder raises (`olb.cache.CacheFolderError`)."""
    check_folders()
    folder = extension_folder()
    try:
        return _load(folder, _verified(folder) or _built(folder))
    except KernelsUnavailable as reason:
        STATE["jit_because"] = str(reason)
    except CacheFolderError:
        raise
    except (OSError, RuntimeError, ValueError, ImportError, subprocess.SubprocessError) as error:
        STATE["jit_because"] = f"olb's compiled kernels could not be loaded from {folder} ({error})"
        _tell(f"{STATE['jit_because']}; {_JIT_COST}. `python -m olb.kernels` retries the build")
    return None


def check_folders(error: type[Exception] = CacheFolderError) -> None:
    """:func:`olb.cache.check_cache_folders` with the kernels' own folders among them: ``$OLB_KERNELS_DIR`` and
    the folder for this machine's key; what ``olb-run`` and the grid check before any work."""
    kernels_root, key = extension_root_path()
    own = [("OLB_KERNELS_DIR", kernels_root, True)] if os.environ.get("OLB_KERNELS_DIR") else []
    check_cache_folders(error, also=[*own, ("kernels folder", kernels_root / key, False)])


def extension_root_path() -> tuple[Path, str]:
    """(the kernels' folder, this machine's key): ``$OLB_KERNELS_DIR`` or ``<cache dir>/kernels``; nothing
    created or checked."""
    chosen = os.environ.get("OLB_KERNELS_DIR")
    return (Path(chosen).expanduser() if chosen else cache_location() / "kernels"), build_key()


def extension_folder() -> Path:
    """``$OLB_KERNELS_DIR/<key>`` (default ``<cache dir>/kernels/<key>``): where the extension for this source,
    these libraries and this processor is kept; its parent created private, every level checked."""
    chosen = os.environ.get("OLB_KERNELS_DIR")
    folder = (private_dir(Path(chosen).expanduser()) if chosen else private_cache("kernels")) / build_key()
    check_folder(folder, follow=False)
    return folder


def build_key() -> str:
    """A digest of everything the extension's machine code depends on (see the module docstring)."""
    digest = hashlib.sha256()
    for module, path in _key_sources().items():
        digest.update(f"{module}\0".encode())
        digest.update(path.read_bytes())
    versions = [sys.version, np.__version__, platform.machine()]
    versions += [_package_version(name) for name in ("numba", "llvmlite")]  # not imported: LLVM is not loaded
    digest.update(repr((versions, target_cpu(), _cpu_features())).encode())
    return digest.hexdigest()[:24]


def _package_version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def _key_sources() -> dict[str, Path]:
    """The sources the extension is compiled from, by module: this one, the declarations' and every module that
    declares kernels or records."""
    found = {module: path for module, (path, _) in declaring_modules().items()}
    machinery = [Path(__file__), Path(declarations.__file__)]  # by file name: run as __main__, this one is too
    return {**{path.name: path for path in machinery}, **found}


def target_cpu() -> str:
    """The processor the extension is compiled for: ``NUMBA_CPU_NAME`` where set (``generic``: any x86-64, as
    ``make test-any-cpu`` uses), else this machine's (``host``)."""
    return os.environ.get("NUMBA_CPU_NAME") or "host"


def _cpu_features() -> str:
    """What identifies this processor's instruction set (Linux: ``/proc/cpuinfo``'s model and flags)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor()
    wanted = ("model name", "flags")
    return "\n".join(sorted({line for line in lines if line.split(":")[0].strip() in wanted}))


def _tell(message: str) -> None:
    """One line on stderr, where a user sees it (also under a grid's progress line)."""
    try:
        print(f"olb: {message}", file=sys.stderr, flush=True)
    except (OSError, ValueError):  # no stderr (closed, or a broken pipe): nothing to tell, nothing to fail
        pass


def _built(folder: Path) -> dict:
    """The verified manifest of ``folder``'s build, made by this process or, while it waits (bounded), by
    another; `KernelsUnavailable` where it cannot be built on this machine."""
    failure = _remembered_failure(folder)
    if failure is not None:
        raise KernelsUnavailable(failure)
    missing = [name for name, path in compilers().items() if path is None]
    if missing:
        _remember_failure(
            folder,
            f"no C/C++ compiler ({', '.join(missing)} not found): install one (Debian/Ubuntu: "
            "`apt-get install build-essential`; Fedora: `dnf install gcc gcc-c++`), or set OLB_KERNELS=jit",
        )
    lock = BuildLock(folder.with_name(f"{folder.name}.lock"))
    started = time.monotonic()
    deadline, told = started + LOCK_TIMEOUT_S, None
    while not lock.take():
        manifest = _verified(folder, warn=False)
        if manifest is not None:
            if told is not None:
                _tell(
                    f"olb's kernels are ready (compiled by another process; waited {time.monotonic() - started:.0f} s)"
                )
            return manifest
        failure = _remembered_failure(folder)
        if failure is not None:  # the other process's build failed (and it said why)
            raise KernelsUnavailable(failure)
        if lock.stale():
            lock.break_stale()
            continue
        if time.monotonic() > deadline:
            raise RuntimeError(f"waited {LOCK_TIMEOUT_S:.0f} s for another process's build ({lock.path})")
        if told is None:
            _tell(
                f"waiting for olb's kernels, being compiled by {lock.holder_text()} ({_expected_text(folder.parent)})..."
            )
            told = time.monotonic()
        elif time.monotonic() - told >= HEARTBEAT_S:
            _tell(f"still waiting for olb's kernels: {time.monotonic() - started:.0f} s")
            told = time.monotonic()
        time.sleep(0.5)
    try:
        manifest = _verified(folder, warn=False)  # another process's build, finished while this one waited
        if manifest is None:
            try:
                _run_build(folder, lock)
            except (OSError, RuntimeError, subprocess.SubprocessError) as error:
                _remember_failure(folder, f"the build failed ({error}); `python -m olb.kernels` retries it")
            manifest = _verified(folder)
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


def _remembered_failure(folder: Path) -> str | None:
    try:
        return _read_nofollow(_failure_marker(folder)).decode(errors="replace").strip() or "an earlier build failed"
    except OSError:
        return None


def _remember_failure(folder: Path, reason: str) -> None:
    """Remember ``reason`` for this machine and toolchain; the one process that records it tells it (one line);
    raise `KernelsUnavailable`."""
    message = f"olb's compiled kernels cannot be built here: {reason}. {_JIT_COST}"
    try:
        fd = os.open(_failure_marker(folder), os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    except FileExistsError:  # another process recorded (and told) it
        raise KernelsUnavailable(_remembered_failure(folder) or message) from None
    except OSError:  # a folder that cannot be written: told by every process, the best it can do
        fd = None
    if fd is not None:
        with os.fdopen(fd, "w") as marker:
            marker.write(message)
    _tell(f"{message} (told once per machine: {_failure_marker(folder).name} in {folder.parent})")
    raise KernelsUnavailable(message)


def _read_nofollow(path: Path) -> bytes:
    """``path``'s bytes, refusing a symbolic link (``OSError``)."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    with os.fdopen(fd, "rb") as file:
        return file.read()


class BuildLock:
    """One build at a time on a kernels' folder, also when the folder is shared over NFS by several machines: a
    file created with ``O_CREAT | O_EXCL`` (atomic on NFS version 3 and later, where ``flock`` is not reliable)
    and never through a link, holding its holder's host, pid and uid, refreshed every ``HEARTBEAT_S`` while the
    build runs. A lock whose process has ended (same host) or that stayed unrefreshed for ``STALE_AFTER_S``, as
    timed by the waiting process's own clock (no clocks compared across machines), is broken. The lock only
    saves duplicate work: a build is renamed into place whole (:func:`build`), so two builds never mix."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._seen: tuple[tuple[int, int], float] | None = None  # (the lock's mtime and inode, since when)

    def take(self) -> bool:
        """Take the lock if it is free."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        except FileExistsError:
            return False
        holder = {"host": socket.gethostname(), "pid": os.getpid(), "uid": getattr(os, "getuid", lambda: -1)()}
        os.write(fd, json.dumps(holder).encode())
        self._fd = fd
        return True

    def refresh(self) -> None:
        if self._fd is not None:
            os.utime(self._fd if os.utime in os.supports_fd else self.path)

    def release(self) -> None:
        """Remove the lock, if it is still this process's (not broken as stale and taken by another)."""
        if self._fd is None:
            return
        try:
            if os.lstat(self.path).st_ino == os.fstat(self._fd).st_ino:
                os.unlink(self.path)
        except FileNotFoundError:
            pass
        finally:
            os.close(self._fd)
            self._fd = None

    def holder(self) -> dict:
        try:
            holder = json.loads(_read_nofollow(self.path))
        except (OSError, ValueError):
            return {}
        return holder if isinstance(holder, dict) else {}

    def holder_text(self) -> str:
        holder = self.holder()
        return f"pid {holder['pid']} on {holder['host']}" if {"pid", "host"} <= holder.keys() else str(self.path)

    def stale(self) -> str | None:
        """Why the lock is a dead build's (``None``: it may be alive, or is gone)."""
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(info.st_mode):
            return "not a lock file olb wrote"
        holder = self.holder()
        if holder.get("host") == socket.gethostname() and not _alive(holder.get("pid")):
            return f"its process {holder.get('pid')} has ended"
        state = (info.st_mtime_ns, info.st_ino)
        if self._seen is None or self._seen[0] != state:
            self._seen = (state, time.monotonic())
            return None
        if time.monotonic() - self._seen[1] > STALE_AFTER_S:
            return f"not refreshed for {STALE_AFTER_S:.0f} s"
        return None

    def break_stale(self) -> None:
        """Remove a stale lock (renamed aside first, so that only one of several waiters removes it)."""
        aside = self.path.with_name(f"{self.path.name}.stale-{socket.gethostname()}-{os.getpid()}")
        try:
            os.rename(self.path, aside)
            os.unlink(aside)
        except FileNotFoundError:
            pass
        self._seen = None


def _alive(pid) -> bool:
    """Whether process ``pid`` of this host runs (assumed so off POSIX, where a signal 0 would end it)."""
    if os.name != "posix" or not isinstance(pid, int) or pid <= 0:
        return os.name != "posix"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _verified(folder: Path, warn: bool = True) -> dict | None:
    """``folder``'s manifest if the extension it names has the recorded SHA-256 (both read without following
    links); ``None`` if there is none yet, and (``warn``) a `CacheWarning` too if it was altered (it is then
    rebuilt, and the altered file left unloaded)."""
    check_folder(folder, follow=False)
    try:
        manifest = json.loads(_read_nofollow(folder / "manifest.json"))
        path = folder / manifest["file"]
        digest = hashlib.sha256(_read_nofollow(path)).hexdigest()
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as error:
        if warn:
            warnings.warn(f"{folder / 'manifest.json'}: unreadable ({error}); rebuilding", CacheWarning, stacklevel=2)
        return None
    if digest == manifest["sha256"]:
        return manifest
    if warn:
        warnings.warn(
            f"{path}: SHA-256 {digest} is not the {manifest['sha256']} recorded at its build; rebuilding",
            CacheWarning,
            stacklevel=2,
        )
    return None


def _run_build(folder: Path, lock: BuildLock) -> None:
    """``python -m olb.kernels --out folder`` in a subprocess, so the compiler's memory is not this process's; it
    imports this very olb (its folder first on ``PYTHONPATH``) and refuses if its sources give another key. The
    lock is refreshed while it runs; a line on stderr when it starts and when it ends."""
    command = [sys.executable, "-m", "olb.kernels", "--out", str(folder), "--key", folder.name]
    path = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")]))
    _tell(
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
            _tell(f"compiling olb's kernels: {time.perf_counter() - started:.0f} s")
    if process.returncode != 0:
        tail = " / ".join(line.strip() for line in errors.strip().splitlines()[-4:] if line.strip())
        raise RuntimeError(f"`{' '.join(command[1:])}` failed (exit {process.returncode}): {tail}")
    STATE["built_s"] = time.perf_counter() - started
    cpu_s = _children_cpu_s() - cpu_before
    _record_build(folder.parent, STATE["built_s"], cpu_s)
    _tell(f"compiled olb's kernels in {STATE['built_s']:.1f} s ({cpu_s:.1f} CPU s; {folder})")


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
        cpu_s = float(json.loads(_read_nofollow(root / BUILD_TIMES))["cpu_s"])
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


def _record_build(root: Path, wall_s: float, cpu_s: float) -> None:
    """Keep a build's seconds for the next one's :func:`expected_build_s` (written whole, never through a link)."""
    record = {"wall_s": round(wall_s, 1), "cpu_s": round(cpu_s, 1), "load": round(os.getloadavg()[0], 1)}
    fd, staged = tempfile.mkstemp(prefix=".last-build-", dir=root)
    try:
        with os.fdopen(fd, "w") as file:
            json.dump({**record, "cpus": os.cpu_count()}, file)
        os.replace(staged, root / BUILD_TIMES)
    except OSError:  # a read-only cache keeps its builds: the next is told no expected time
        Path(staged).unlink(missing_ok=True)


def _load(folder: Path, manifest: dict) -> dict[str, dict[str, Callable]]:
    """The extension ``manifest`` names (verified), its functions behind their argument checks, its scipy symbols
    bound."""
    path = folder / manifest["file"]
    loader = importlib.machinery.ExtensionFileLoader(EXTENSION, str(path))
    spec = importlib.util.spec_from_file_location(EXTENSION, path, loader=loader)
    assert spec is not None
    extension = importlib.util.module_from_spec(spec)
    loader.exec_module(extension)
    library = ctypes.CDLL(str(path))
    for symbol, scipy_name in SCIPY_SYMBOLS.items():
        ctypes.c_void_p.in_dll(library, f"{symbol}_target").value = _cython_special_address(scipy_name)
    return {
        module: {
            name: _checked(f"{module}.{name}", getattr(extension, export_name(module, name)), arguments)
            for name, arguments in exports.items()
        }
        for module, exports in manifest["exports"].items()
    }


def _cython_special_address(name: str) -> int:
    """The address of a ``scipy.special.cython_special`` C function (what ``numba.extending.
    get_cython_function_address`` returns, without numba)."""
    import scipy.special.cython_special as cython_special

    capsule = cython_special.__pyx_capi__[name]
    get_name, get_pointer = ctypes.pythonapi.PyCapsule_GetName, ctypes.pythonapi.PyCapsule_GetPointer
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, get_name(capsule))


def export_name(module: str, name: str) -> str:
    """The extension's name for ``module.name`` (one extension holds every kernel module)."""
    return f"{module.rsplit('.', 1)[1]}__{name}"


def _checked(name: str, function: Callable, arguments: list[ArgumentType]) -> Callable:
    """``function`` behind a check of its arguments against their declared types: the extension would misread an
    array of another dtype, dimension or layout (or a record of other fields) instead of raising."""
    specs = {
        position: argument_spec(argument) for position, argument in enumerate(arguments) if isinstance(argument, str)
    }
    arrays = [(position, *spec) for position, spec in specs.items() if spec[1]]
    integers = [position for position, (dtype, ndim, _) in specs.items() if not ndim and dtype.kind in "iub"]
    records = [
        (position, _RecordCheck(f"{name}: argument {position}", argument))
        for position, argument in enumerate(arguments)
        if isinstance(argument, dict)
    ]

    def call(*args):
        if len(args) != len(arguments):
            raise TypeError(f"{name} takes {len(arguments)} arguments ({len(args)} given)")
        for position, dtype, ndim, c_order in arrays:
            value = args[position]
            if (
                type(value) is not np.ndarray
                or value.dtype != dtype
                or value.ndim != ndim
                or (c_order and not value.flags.c_contiguous)
            ):
                raise TypeError(f"{name}: argument {position} must be {arguments[position]}, got {describe(value)}")
        for position in integers:
            if not isinstance(args[position], int | np.integer | np.bool_):
                raise TypeError(
                    f"{name}: argument {position} must be {arguments[position]}, got {describe(args[position])}"
                )
        for position, check in records:
            check(args[position])
        return function(*args)

    call.__name__ = call.__qualname__ = name.rsplit(".", 1)[1]
    described = (argument if isinstance(argument, str) else argument["record"] for argument in arguments)
    call.__doc__ = f"{name} ({', '.join(described)}), compiled ahead of time."
    return call


class _RecordCheck:
    """The check of a record argument: its class must be the kernel record the extension was compiled for (its
    fields declared alike). A record checks its own fields when it is made (``@kernel_record``)."""

    def __init__(self, where: str, record: dict[str, Any]) -> None:
        self.where, self.declared = where, record
        self.record_class: type | None = None  # the class, once seen

    def __call__(self, value) -> None:
        if type(value) is self.record_class:
            return
        cls = type(value)
        if RECORDS.get(f"{cls.__module__}.{cls.__qualname__}") is not cls or record_types(cls) != self.declared:
            raise TypeError(f"{self.where} must be a {self.declared['record']} record, got {describe(value)}")
        self.record_class = cls


def build(folder: Path) -> Path:
    """Compile every declared kernel into the extension, with its manifest (the kernels' argument types and the
    extension's SHA-256), in a private folder beside ``folder`` that is then renamed to it whole
    (:func:`_install`); every temporary file of the compilers stays in that folder, removed at the end. The
    path of the installed extension."""
    from numba.pycc import CC
    from numba.pycc.platform import external_compiler_works

    class _CC(CC):  # the scipy symbols' definitions, compiled and linked with the extension
        def _get_mixin_sources(self):
            return [*super()._get_mixin_sources(), str(shim)]

    building = Path(tempfile.mkdtemp(prefix=f".{folder.name}.build-", dir=private_dir(folder.parent)))
    scratch = building / "scratch"
    scratch.mkdir()
    previous = os.environ.get("TMPDIR")
    tempfile.tempdir = os.environ["TMPDIR"] = str(scratch)  # numba's and setuptools' temporary folders, gcc's files
    try:
        if not external_compiler_works():
            raise RuntimeError(
                f"the C/C++ compiler ({', '.join(compilers()) or 'the default'}) fails on a test program"
            )
        shim = scratch / "olb_scipy_symbols.c"
        shim.write_text(_SHIM)
        compiler = _CC(EXTENSION)
        compiler.output_dir = str(scratch)
        compiler.target_cpu = target_cpu()
        exports: dict[str, dict[str, list[ArgumentType]]] = {}
        for module in check_declarations():
            exports[module] = {name: declared.arguments for name, declared in KERNELS[module].items()}
            for name, declared in KERNELS[module].items():
                signature = _signature(declared.function, declared.arguments)
                compiler.export(export_name(module, name), signature)(declared.function.py_func)
        compiler.compile()
        built = next(scratch.glob(f"{EXTENSION}*"))
        digest = hashlib.sha256(built.read_bytes()).hexdigest()
        name = f"{EXTENSION}-{digest[:16]}{''.join(built.suffixes)}"
        built.rename(building / name)
        shutil.rmtree(scratch)
        manifest = {"file": name, "sha256": digest, "exports": exports}
        (building / "manifest.json").write_text(json.dumps(manifest, indent=1))
        installed = _install(building, folder)
    finally:
        tempfile.tempdir = None
        if previous is None:
            os.environ.pop("TMPDIR")
        else:
            os.environ["TMPDIR"] = previous
        shutil.rmtree(building, ignore_errors=True)  # gone already once installed
    return folder / installed["file"]


def _install(building: Path, folder: Path) -> dict:
    """Rename the finished build ``building`` to ``folder``, atomically (also over NFS), replacing an unusable
    folder there; where another build was installed first, keep that one. The installed manifest."""
    for _ in range(3):
        try:
            os.rename(building, folder)
        except OSError:  # a folder there already: another build's, or an altered or unfinished one
            manifest = _verified(folder, warn=False)
            if manifest is not None:
                return manifest
            aside = Path(tempfile.mkdtemp(prefix=f".{folder.name}.old-", dir=folder.parent))
            try:
                os.rename(folder, aside / "old")
            except FileNotFoundError:  # moved by another build meanwhile
                pass
            shutil.rmtree(aside, ignore_errors=True)
            continue
        manifest = _verified(folder, warn=False)
        if manifest is not None:
            return manifest
    raise RuntimeError(f"could not install the build in {folder}")


def check_declarations() -> list[str]:
    """Import every module of olb found to declare kernels or records, and check that they are all that olb
    declares (a declaration the search missed would not be compiled, and vice versa): the kernel modules."""
    found = declaring_modules()
    for module in found:
        importlib.import_module(module)
    in_olb = {module for module in [*KERNELS, *RECORDS] if module.split(".")[0] == PACKAGE.name}
    with_kernels = {module for module in in_olb if module in KERNELS}
    with_records = {cls.__module__ for name, cls in RECORDS.items() if name in in_olb}
    missed = (with_kernels - set(kernel_modules())) | (with_records - set(found))
    if missed:
        raise RuntimeError(f"{', '.join(sorted(missed))}: declarations without a line that starts with @kernel")
    empty = (set(kernel_modules()) - with_kernels) | (set(found) - with_kernels - with_records)
    if empty:
        raise RuntimeError(f"{', '.join(sorted(empty))}: a line starts with @kernel, but nothing is declared there")
    return kernel_modules()


def _signature(dispatcher, arguments: list[ArgumentType]):
    """numba's signature for a kernel: its declared argument types, the return type numba infers."""
    argument_types = tuple(_numba_type(argument) for argument in arguments)
    dispatcher.compile(argument_types)
    return dispatcher.overloads[argument_types].signature.return_type(*argument_types)


def _numba_type(argument: ArgumentType):
    """numba's type for a declared argument type (``float64[:, ::1]``: numba's own notation; a record: a named
    tuple of its fields' types)."""
    from numba import types as numba_types

    if isinstance(argument, dict):
        fields = [_numba_type(numba_type) for numba_type in argument["fields"].values()]
        return numba_types.NamedTuple(fields, RECORDS[argument["record"]])
    argument_spec(argument)  # checked first: only the dtypes and layouts the argument check knows
    return eval(argument, {"__builtins__": {}}, {name: getattr(numba_types, name) for name in DTYPES})  # noqa: S307


def main(argv: list[str] | None = None) -> int:
    """``python -m olb.kernels [--out FOLDER]``: build the extension (into this machine's cache folder by
    default; a failure remembered there is forgotten) and print where it is."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m olb.kernels", description=main.__doc__)
    parser.add_argument("--out", type=Path, help="the folder to build into (default: the cache's)")
    parser.add_argument("--key", help="refuse unless this olb's sources, libraries and processor give this key")
    options = parser.parse_args(argv)
    if options.key and options.key != build_key():
        parser.error(f"--key {options.key}: this olb ({Path(__file__).parent}) gives {build_key()}")
    folder = options.out or extension_folder()
    started = time.perf_counter()
    try:
        target = build(folder)
    except (RuntimeError, CacheFolderError) as error:
        print(f"python -m olb.kernels: {error}", file=sys.stderr)
        return 1
    if not options.key:  # run by hand: a retry
        for marker in folder.parent.glob(f"{folder.name}.failed-*"):
            marker.unlink(missing_ok=True)
    print(f"built {target} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
