"""olb's compiled kernels, built ahead of time once per user and machine, so that the processes that run cells
load neither numba nor LLVM.

The kernels are numba functions in four modules (:data:`KERNEL_MODULES`); each lists the functions called from
Python and their argument types in ``EXPORTS``. ``python -m olb.kernels`` compiles them, with numba's own
compiler for this machine's processor, into one extension module (``numba.pycc``) in the per-user cache
(``$OLB_KERNELS_DIR/<key>/``, by default ``<cache dir>/kernels/<key>/``, :func:`olb.cache.cache_dir`). A process
then imports only that module: the same machine code numba's JIT would make, without numba's typing tables and
LLVM's compiler, about 110 MB per process (``docs/speed.md``). :func:`kernels` returns a module's functions from the extension, building it first (in a
subprocess, under a lock, so concurrent processes build once) when it is missing.

``OLB_KERNELS`` picks how kernels are run:

* ``aot`` (the default): the extension, built if missing; where the build fails (no C compiler, say) a
  `KernelBuildWarning` names the reason and the process falls back to numba's JIT.
* ``jit``: numba's JIT, as when developing a kernel (an edited kernel module changes the key, so ``aot`` would
  rebuild the whole extension after every edit).

Both run the same numba code and give the same results bit for bit (``tests/test_kernels.py``). The key
covers the kernel modules' source, this file, the Python, numpy, numba and llvmlite versions and the
processor's name and features; the extension's SHA-256 is recorded beside it and checked on every load.
Arguments are checked before every call (dtype, dimensions, C order), since the extension itself checks only
the item size.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import importlib
import importlib.machinery
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np

from olb.cache import CacheWarning, private_cache, private_dir

KERNEL_MODULES = (
    "olb.weak.vfdt_core",
    "olb.learners.boosting.rounds",
    "olb.learners.linear.alt_loss",
    "olb.learners.linear.passes",
)
MODES = ("aot", "jit")
EXTENSION = "olb_kernels"
BUILD_TIMEOUT_S = 1800.0  # the build (numba, then a C compiler) took 13-30 s on a 2-core machine
LOCK_TIMEOUT_S = BUILD_TIMEOUT_S + 60.0  # a process waiting for another's build

# scipy functions the kernels call by symbol (``types.ExternalFunction``): the extension defines each symbol as a
# call through a pointer, set on load to scipy's own function (``scipy.special.cython_special``).
SCIPY_SYMBOLS = {"olb_scipy_ndtr": "__pyx_fuse_1ndtr", "olb_scipy_expit": "__pyx_fuse_0expit"}
_SHIM = "".join(
    f"double (*{symbol}_target)(double) = 0;\ndouble {symbol}(double x) {{ return {symbol}_target(x); }}\n"
    for symbol in SCIPY_SYMBOLS
)
_DTYPES: dict[str, np.dtype] = {name: np.dtype(name) for name in ("float64", "int64", "int32", "int8")}
_DTYPES["boolean"] = np.dtype(np.bool_)  # numba's name for it


class KernelBuildWarning(UserWarning):
    """The kernels' extension could not be built or loaded: this process runs numba's JIT instead."""


def mode() -> str:
    """``OLB_KERNELS`` (``aot`` unless set), checked."""
    chosen = os.environ.get("OLB_KERNELS", "aot")
    if chosen not in MODES:
        raise ValueError(f"OLB_KERNELS={chosen!r}: allowed {', '.join(MODES)}")
    return chosen


class KernelModule:
    """A kernel module's functions (its ``EXPORTS``), loaded on first use: ``vfdt_core = KernelModule(
    "olb.weak.vfdt_core")`` at import time costs nothing; ``vfdt_core.route(...)`` loads them all."""

    def __init__(self, module: str) -> None:
        if module not in KERNEL_MODULES:
            raise ValueError(f"{module!r} is not a kernel module; they are: {', '.join(KERNEL_MODULES)}")
        self._module = module

    def __getattr__(self, name: str) -> Callable:
        if name.startswith("__"):
            raise AttributeError(name)
        functions = kernels(self._module)
        self.__dict__.update(functions)
        if name not in functions:
            raise AttributeError(f"{self._module} exports no kernel {name!r} (its EXPORTS: {', '.join(functions)})")
        return functions[name]


# Seconds (wall, CPU) this process spent building and loading kernels, left out of a cell's timings as numba's
# compiling is (``olb.protocol.Stopwatch``).
LOADING = [0.0, 0.0]


def kernels(module: str) -> dict[str, Callable]:
    """The functions ``module`` exports, from the extension (``aot``) or numba's JIT (``jit``, or where the
    extension could not be built; a `KernelBuildWarning` says why)."""
    started = time.perf_counter(), time.process_time()
    try:
        if mode() == "aot":
            extension = _extension()
            if extension is not None:
                return extension[module]
        return _jit(module)
    finally:
        LOADING[0] += time.perf_counter() - started[0]
        LOADING[1] += time.process_time() - started[1]


@cache
def _jit(module: str) -> dict[str, Callable]:
    loaded = importlib.import_module(module)
    return {name: getattr(loaded, name) for name in loaded.EXPORTS}


@cache
def _extension() -> dict[str, dict[str, Callable]] | None:
    """The extension's functions per kernel module, built first where missing; ``None`` (with a warning) where it
    cannot be built or loaded."""
    folder = extension_folder()
    try:
        return _load(folder, _verified(folder) or _build_locked(folder))
    except (OSError, RuntimeError, ValueError, ImportError, subprocess.SubprocessError) as error:
        warnings.warn(
            f"olb's compiled kernels could not be built or loaded in {folder} ({error}); running numba's JIT, "
            "which gives the same results but holds about 110 MB more per process. `python -m olb.kernels` retries "
            "the build; OLB_KERNELS=jit silences this",
            KernelBuildWarning,
            stacklevel=4,  # the code that first used a kernel
        )
        return None


def extension_folder() -> Path:
    """``$OLB_KERNELS_DIR/<key>`` (default ``<cache dir>/kernels/<key>``): where the extension for this source,
    these libraries and this processor is kept."""
    chosen = os.environ.get("OLB_KERNELS_DIR")
    return (private_dir(Path(chosen).expanduser()) if chosen else private_cache("kernels")) / build_key()


def build_key() -> str:
    """A digest of everything the extension's machine code depends on (see the module docstring)."""
    digest = hashlib.sha256()
    for path in [Path(__file__), *(_source(module) for module in KERNEL_MODULES)]:
        digest.update(path.read_bytes())
    versions = [sys.version, np.__version__, platform.machine()]
    versions += [_package_version(name) for name in ("numba", "llvmlite")]  # not imported: LLVM is not loaded
    digest.update(repr((versions, target_cpu(), _cpu_features())).encode())
    return digest.hexdigest()[:24]


def _package_version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def _source(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ImportError(f"kernel module {module} not found")
    return Path(spec.origin)


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


def _build_locked(folder: Path) -> dict:
    """Build into ``folder`` unless another process did while this one waited for the lock (bounded); the verified
    manifest."""
    lock_path = folder.with_suffix(".lock")
    with open(lock_path, "w") as lock:
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"waited {LOCK_TIMEOUT_S:.0f} s for another process's build ({lock_path})")
                time.sleep(0.5)
        manifest = _verified(folder, warn=False)  # another process's build, finished while this one waited
        if manifest is None:
            _run_build(folder)
            manifest = _verified(folder)
    if manifest is None:
        raise RuntimeError(f"no verified build in {folder} after building it")
    return manifest


def _verified(folder: Path, warn: bool = True) -> dict | None:
    """``folder``'s manifest if the extension it names has the recorded SHA-256; ``None`` if there is none yet,
    and (``warn``) a `CacheWarning` too if the file was altered (it is then rebuilt, and the altered file left
    unread)."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
        path = folder / manifest["file"]
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as error:
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


def _run_build(folder: Path) -> None:
    """``python -m olb.kernels --out folder`` in a subprocess, so the compiler's memory is not this process's; it
    imports this very olb (its folder first on ``PYTHONPATH``) and refuses if its sources give another key."""
    command = [sys.executable, "-m", "olb.kernels", "--out", str(folder), "--key", folder.name]
    path = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")]))
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, env={**os.environ, "PYTHONPATH": path}
        )
    except subprocess.TimeoutExpired as error:
        raise RuntimeError(f"the build took more than {BUILD_TIMEOUT_S:.0f} s") from error
    if done.returncode != 0:
        tail = " / ".join(line.strip() for line in done.stderr.strip().splitlines()[-4:] if line.strip())
        raise RuntimeError(f"`{' '.join(command[1:])}` failed (exit {done.returncode}): {tail}")


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


def argument_types(text: str) -> list[str]:
    """A kernel's ``EXPORTS`` entry as one type per argument.

    >>> argument_types("float64[:, ::1], int64, boolean[::1]")
    ['float64[:, ::1]', 'int64', 'boolean[::1]']
    """
    types, depth, start = [], 0, 0
    for position, character in enumerate(text + ","):
        depth += {"[": 1, "]": -1}.get(character, 0)
        if character == "," and depth == 0:
            types.append(text[start:position].strip())
            start = position + 1
    return types


def argument_spec(numba_type: str) -> tuple[np.dtype, int, bool]:
    """(dtype, dimensions, C order) of an ``EXPORTS`` type: ``float64`` (0 dimensions), ``int64[::1]``,
    ``float64[:, ::1]`` (C order), ``float64[:]`` (any strides)."""
    base, _, rest = numba_type.partition("[")
    if base not in _DTYPES:
        raise ValueError(f"kernel argument type {numba_type!r}: the dtype must be one of {', '.join(_DTYPES)}")
    axes = rest.rstrip("]").split(",") if rest else []
    return _DTYPES[base], len(axes), bool(axes) and axes[-1].strip() == "::1"


def _checked(name: str, function: Callable, arguments: list[str]) -> Callable:
    """``function`` behind a check of its arguments against their ``EXPORTS`` types: the extension would
    misread an array of another dtype, dimension or layout instead of raising."""
    specs = [argument_spec(argument) for argument in arguments]
    arrays = [(position, *spec) for position, spec in enumerate(specs) if spec[1]]
    integers = [position for position, (dtype, ndim, _) in enumerate(specs) if not ndim and dtype.kind in "iub"]

    def call(*args):
        if len(args) != len(specs):
            raise TypeError(f"{name} takes {len(specs)} arguments ({len(args)} given)")
        for position, dtype, ndim, c_order in arrays:
            value = args[position]
            if (
                type(value) is not np.ndarray
                or value.dtype != dtype
                or value.ndim != ndim
                or (c_order and not value.flags.c_contiguous)
            ):
                raise TypeError(f"{name}: argument {position} must be {arguments[position]}, got {_describe(value)}")
        for position in integers:
            if not isinstance(args[position], int | np.integer | np.bool_):
                raise TypeError(
                    f"{name}: argument {position} must be {arguments[position]}, got {_describe(args[position])}"
                )
        return function(*args)

    call.__name__ = call.__qualname__ = name.rsplit(".", 1)[1]
    call.__doc__ = f"{name} ({', '.join(arguments)}), compiled ahead of time."
    return call


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        order = "C order" if value.flags.c_contiguous else "strided"
        return f"a {value.ndim}-d {value.dtype} array ({order})"
    return type(value).__name__


def build(folder: Path) -> Path:
    """Compile every kernel module's ``EXPORTS`` into the extension in ``folder``, with its manifest (the
    exports' argument types and the extension's SHA-256), written last."""
    from numba.pycc import CC

    class _CC(CC):  # the scipy symbols' definitions, compiled and linked with the extension
        def _get_mixin_sources(self):
            return [*super()._get_mixin_sources(), str(shim)]

    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="olb-kernels-") as scratch:
        shim = Path(scratch) / "olb_scipy_symbols.c"
        shim.write_text(_SHIM)
        compiler = _CC(EXTENSION)
        compiler.output_dir = scratch
        compiler.target_cpu = target_cpu()
        exports: dict[str, dict[str, list[str]]] = {}
        for module in KERNEL_MODULES:
            loaded = importlib.import_module(module)
            exports[module] = {name: argument_types(text) for name, text in loaded.EXPORTS.items()}
            for name, arguments in exports[module].items():
                compiler.export(export_name(module, name), _signature(getattr(loaded, name), arguments))(
                    getattr(loaded, name).py_func
                )
        compiler.compile()
        built = next(Path(scratch).glob(f"{EXTENSION}*"))
        digest = hashlib.sha256(built.read_bytes()).hexdigest()
        # named by its digest: a process reading the previous manifest still finds the file that manifest names
        target = folder / f"{EXTENSION}-{digest[:16]}{''.join(built.suffixes)}"
        shutil.move(built, target)
    manifest = {"file": target.name, "sha256": digest, "exports": exports}
    partial = folder / "manifest.json.partial"
    partial.write_text(json.dumps(manifest, indent=1))
    partial.replace(folder / "manifest.json")
    return target


def _signature(dispatcher, arguments: list[str]):
    """numba's signature for a kernel: the argument types of ``EXPORTS``, the return type numba infers."""
    options = {
        name for name, value in dispatcher.targetoptions.items() if value and name not in ("cache", "nogil", "nopython")
    }
    if options:  # the extension compiles the function itself with numba's default options
        raise ValueError(f"kernel {dispatcher.__name__} has options {sorted(options)}: export a plain @njit wrapper")
    argument_types = tuple(_numba_type(argument) for argument in arguments)
    dispatcher.compile(argument_types)
    return dispatcher.overloads[argument_types].signature.return_type(*argument_types)


def _numba_type(text: str):
    """numba's type for an ``EXPORTS`` type (``float64[:, ::1]``: numba's own notation)."""
    from numba import types as numba_types

    argument_spec(text)  # checked first: only the dtypes and layouts the argument check knows
    return eval(text, {"__builtins__": {}}, {name: getattr(numba_types, name) for name in _DTYPES})  # noqa: S307


def main(argv: list[str] | None = None) -> int:
    """``python -m olb.kernels [--out FOLDER]``: build the extension (into this machine's cache folder by
    default) and print where it is."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m olb.kernels", description=main.__doc__)
    parser.add_argument("--out", type=Path, help="the folder to build into (default: the cache's)")
    parser.add_argument("--key", help="refuse unless this olb's sources, libraries and processor give this key")
    options = parser.parse_args(argv)
    if options.key and options.key != build_key():
        parser.error(f"--key {options.key}: this olb ({Path(__file__).parent}) gives {build_key()}")
    started = time.perf_counter()
    target = build(options.out or extension_folder())
    print(f"built {target} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
