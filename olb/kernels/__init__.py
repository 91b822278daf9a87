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
covers the source of the modules that declare kernels and records, this package and :mod:`olb.kernel_declarations`,
the Python, numpy, numba and llvmlite versions and the processor's name and features; the extension's SHA-256 is recorded beside it and checked on every load, and
nothing is read from a folder another user could write (:mod:`olb.cache`). Arguments are checked before every
call (dtype, dimensions, C order; a record's class, its fields checked when it is made), since the extension
itself checks only the item size. The time spent building, loading or (under the JIT) compiling kernels is counted in
:data:`LOADING`, which a cell's ``compile_s`` holds.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import time
from collections.abc import Callable
from functools import cache
from typing import Any

from olb.cache import CacheFolderError
from olb.kernel_declarations import KERNELS, kernel_modules
from olb.kernels.building import (
    BUILD_TIMEOUT_S,
    BUILD_TIMES,
    HEARTBEAT_S,
    JIT_COST,
    LOCK_TIMEOUT_S,
    STATE,
    KernelsUnavailable,
    built,
    compilers,
    expected_build_s,
    tell,
)
from olb.kernels.compiling import build, check_declarations, main
from olb.kernels.key import build_key, check_folders, extension_folder, extension_root_path, target_cpu
from olb.kernels.loading import EXTENSION, SCIPY_SYMBOLS, export_name, load, verified
from olb.kernels.lock import STALE_AFTER_S, BuildLock

__all__ = [
    "BUILD_TIMEOUT_S",
    "BUILD_TIMES",
    "EXTENSION",
    "HEARTBEAT_S",
    "LOADING",
    "LOCK_TIMEOUT_S",
    "MODES",
    "SCIPY_SYMBOLS",
    "STALE_AFTER_S",
    "STATE",
    "BuildLock",
    "KernelModule",
    "KernelsUnavailable",
    "build",
    "build_key",
    "check_declarations",
    "check_folders",
    "compilers",
    "count_numba_compiling",
    "expected_build_s",
    "export_name",
    "extension_folder",
    "extension_root_path",
    "kernels",
    "main",
    "mode",
    "ready",
    "target_cpu",
]

MODES = ("aot", "jit")


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


@cache
def _extension() -> dict[str, dict[str, Callable]] | None:
    """The extension's functions per kernel module, built first where missing; ``None`` where it cannot be built
    or loaded (the JIT runs the kernels instead). A refused cache folder raises (`olb.cache.CacheFolderError`)."""
    check_folders()
    folder = extension_folder()
    try:
        return load(folder, verified(folder) or built(folder))
    except KernelsUnavailable as reason:
        STATE["jit_because"] = str(reason)
    except CacheFolderError:
        raise
    except (OSError, RuntimeError, ValueError, ImportError, subprocess.SubprocessError) as error:
        STATE["jit_because"] = f"olb's compiled kernels could not be loaded from {folder} ({error})"
        tell(f"{STATE['jit_because']}; {JIT_COST}. `python -m olb.kernels` retries the build")
    return None
