"""This machine's key for olb's kernels, and its folder: a digest of everything the extension's machine code
depends on (the sources it is compiled from, the libraries' versions, the processor), which names the folder the
extension is kept in (``$OLB_KERNELS_DIR/<key>``, by default ``<cache dir>/kernels/<key>``)."""

from __future__ import annotations

import hashlib
import os
import platform
import re
import sys
from functools import cache
from pathlib import Path

import numpy as np

from olb import kernel_declarations as declarations
from olb.cache import CacheFolderError, cache_location, check_cache_folders, check_folder, private_cache, private_dir
from olb.kernel_declarations import PACKAGE, declaring_modules
from olb.paths import module_name, python_sources

_NUMBA_IMPORT = re.compile(rb"^(from|import) numba\b", re.MULTILINE)


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
    """The sources the extension is compiled from, by module: this package's (the build, its loading and their
    checks), the declarations', every module that declares kernels or records and every module that imports
    numba (the kernels' helpers, compiled into the extension with the kernels that call them)."""
    found = {module: path for module, (path, _) in declaring_modules().items()}
    machinery = [*sorted(Path(__file__).parent.glob("*.py")), Path(declarations.__file__)]  # by file name
    return {**{f"{path.parent.name}/{path.name}": path for path in machinery}, **found, **numba_modules()}


@cache
def numba_modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of ``package`` (olb) that imports numba at its top level, by its source (nothing imported)."""
    found = {}
    for path in sorted(python_sources(package)):
        if _NUMBA_IMPORT.search(path.read_bytes()):
            found[module_name(path, package)] = path
    return found


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
