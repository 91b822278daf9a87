"""Loading olb's compiled kernels: the extension verified against the SHA-256 recorded at its build, its scipy
symbols bound, each function behind a check of its arguments (dtype, dimensions, C order; a record's class),
since the extension itself checks only the item size."""

from __future__ import annotations

import ctypes
import hashlib
import importlib.machinery
import importlib.util
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from olb.cache import CacheWarning, check_folder
from olb.kernel_declarations import RECORDS, ArgumentType, argument_spec, describe, record_types
from olb.kernels.lock import read_nofollow

EXTENSION = "olb_kernels"


# scipy functions the kernels call by symbol (``types.ExternalFunction``): the extension defines each symbol as a
# call through a pointer, set on load to scipy's own function (``scipy.special.cython_special``).
SCIPY_SYMBOLS = {"olb_scipy_ndtr": "__pyx_fuse_1ndtr", "olb_scipy_expit": "__pyx_fuse_0expit"}


def verified(folder: Path, warn: bool = True) -> dict | None:
    """``folder``'s manifest if the extension it names has the recorded SHA-256 (both read without following
    links); ``None`` if there is none yet, and (``warn``) a `CacheWarning` too if it was altered (it is then
    rebuilt, and the altered file left unloaded)."""
    check_folder(folder, follow=False)
    try:
        manifest = json.loads(read_nofollow(folder / "manifest.json"))
        path = folder / manifest["file"]
        digest = hashlib.sha256(read_nofollow(path)).hexdigest()
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


def load(folder: Path, manifest: dict) -> dict[str, dict[str, Callable]]:
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
