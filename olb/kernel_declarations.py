"""How a compiled kernel is declared: ``@kernel`` on a numba function, its argument types in its annotations.

A kernel is a function that Python calls and :mod:`olb.kernels` compiles ahead of time (or runs under numba's
JIT). Declaring one is one edit, in any module of olb::

    @kernel
    def row_scores(W: Float64Array2D, idx: Int64Array1D, val: Float64Array1D, out: Float64Array1D):
        ...

``@kernel`` compiles the function with numba (``njit(cache=True, nogil=True)``) and registers it with its argument
types, read from its annotations: the aliases below, in numba's notation (``[::1]``: C order), or a record. A
record (``@kernel_record``) is a ``NamedTuple`` whose fields are annotated the same way, passed whole, so that a
kernel over many arrays takes one argument (the VFDT forest's :class:`olb.weak.vfdt_arrays.ForestArrays`).

No list names the modules that declare kernels: :func:`declaring_modules` finds them by their source, a line
that starts with ``@kernel`` or ``@kernel_record``, without importing them (a process that runs the compiled
kernels imports neither numba nor the kernels' modules). The build imports them and checks that the two agree.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Annotated, Any, NamedTuple, TypeVar

import numpy as np

from olb.paths import module_name, python_sources

# A kernel argument's type: numba's notation for an array or a scalar, or a record's fields, in the JSON form the
# extension's manifest keeps: {"record": "<module>.<class>", "fields": {name: type, ...}}.
ArgumentType = str | dict[str, Any]

Float64 = Annotated[float, "float64"]
Int64 = Annotated[int, "int64"]
Boolean = Annotated[bool, "boolean"]
Float64Array1D = Annotated[np.ndarray, "float64[::1]"]
Float64Array2D = Annotated[np.ndarray, "float64[:, ::1]"]
Float64Array3D = Annotated[np.ndarray, "float64[:, :, ::1]"]
Int64Array1D = Annotated[np.ndarray, "int64[::1]"]
Int64Array2D = Annotated[np.ndarray, "int64[:, ::1]"]
Int32Array2D = Annotated[np.ndarray, "int32[:, ::1]"]
Int8Array1D = Annotated[np.ndarray, "int8[::1]"]
Int8Array2D = Annotated[np.ndarray, "int8[:, ::1]"]
BooleanArray1D = Annotated[np.ndarray, "boolean[::1]"]
BooleanArray2D = Annotated[np.ndarray, "boolean[:, ::1]"]

DTYPES: dict[str, np.dtype] = {name: np.dtype(name) for name in ("float64", "int64", "int32", "int8")}
DTYPES["boolean"] = np.dtype(np.bool_)  # numba's name for it

PACKAGE = Path(__file__).resolve().parent
_DECLARATION = re.compile(rb"^@kernel(_record)?\b", re.MULTILINE)


class Kernel(NamedTuple):
    """A declared kernel: its numba function and its argument types."""

    function: Any  # numba's dispatcher
    arguments: list[ArgumentType]


# What the modules imported so far declare: module -> kernel name -> kernel; record class name -> class.
KERNELS: dict[str, dict[str, Kernel]] = {}
RECORDS: dict[str, type] = {}

F = TypeVar("F", bound=Callable)
R = TypeVar("R", bound=type)


def kernel(function: F) -> F:
    """Compile ``function`` with numba and register it as a kernel, its argument types read from its annotations
    (every argument annotated, none with a default: the extension takes every argument). Module-level functions
    only: the extension names a kernel by its module and name."""
    from numba import njit

    if function.__qualname__ != function.__name__:
        raise ValueError(f"kernel {function.__module__}.{function.__qualname__}: kernels are module-level functions")
    arguments = _argument_types(function, f"kernel {function.__module__}.{function.__name__}")
    compiled = njit(cache=True, nogil=True)(function)
    KERNELS.setdefault(function.__module__, {})[function.__name__] = Kernel(compiled, arguments)
    return typing.cast(F, compiled)  # numba's dispatcher, called as the function


def kernel_record(cls: R) -> R:
    """Register the ``NamedTuple`` ``cls`` as a record kernels take whole, each field annotated with a kernel
    type (an array or a scalar; no record within a record). Every record made (``cls(...)``, ``_make``,
    ``_replace``, unpickling) has its fields checked against these types, so that a kernel's call checks only
    the record's class (its arrays change only when they grow, its calls come per example)."""
    if not (issubclass(cls, tuple) and hasattr(cls, "_fields")):
        raise TypeError(f"kernel record {cls.__qualname__}: must be a NamedTuple")
    checked = _fields_check(f"kernel record {cls.__qualname__}", record_types(cls)["fields"])
    new, make = cls.__new__, cls._make.__func__  # type: ignore[attr-defined]  # a NamedTuple's

    def made(record_class, *args, **kwargs):
        return checked(new(record_class, *args, **kwargs))

    def made_from(record_class, iterable):
        return checked(make(record_class, iterable))

    # set on the finished class: a NamedTuple's body may not define them
    setattr(cls, "__new__", staticmethod(made))
    setattr(cls, "_make", classmethod(made_from))  # what _replace calls
    RECORDS[record_name(cls)] = cls
    return cls


def _fields_check(what: str, fields: dict[str, str]) -> Callable:
    specs = [(field, numba_type, argument_spec(numba_type)) for field, numba_type in fields.items()]

    def checked(record):
        for value, (field, numba_type, spec) in zip(record, specs, strict=True):
            if not matches(value, *spec):
                raise TypeError(f"{what}: field {field!r} must be {numba_type}, got {describe(value)}")
        return record

    return checked


def record_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def record_types(cls: type) -> dict[str, Any]:
    """A record's argument type: its class and its fields' types (JSON, as the manifest keeps it)."""
    hints = _hints(cls, f"kernel record {cls.__qualname__}")
    fields = {}
    for name in cls._fields:  # type: ignore[attr-defined]  # a NamedTuple, checked by kernel_record
        if name not in hints:
            raise TypeError(f"kernel record {cls.__qualname__}: field {name!r} has no type annotation")
        fields[name] = _plain_type(hints[name], f"kernel record {cls.__qualname__}, field {name!r}")
    return {"record": record_name(cls), "fields": fields}


def _argument_types(function: Callable, what: str) -> list[ArgumentType]:
    hints = _hints(function, what)
    types: list[ArgumentType] = []
    for parameter in inspect.signature(function).parameters.values():
        where = f"{what}, argument {parameter.name!r}"
        if parameter.kind is not parameter.POSITIONAL_OR_KEYWORD or parameter.default is not parameter.empty:
            raise TypeError(f"{where}: a kernel takes plain positional arguments, without defaults")
        if parameter.name not in hints:
            raise TypeError(f"{where} has no type annotation (olb.kernel_declarations: Float64Array1D, ...)")
        hint = hints[parameter.name]
        types.append(record_types(hint) if hint in RECORDS.values() else _plain_type(hint, where))
    return types


def _hints(target: Any, what: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(target, include_extras=True)
    except NameError as error:
        raise TypeError(f"{what}: its annotations do not resolve ({error}): import their types first") from None


def _plain_type(hint: Any, where: str) -> str:
    """The numba notation an ``Annotated`` alias carries, checked."""
    metadata: tuple = getattr(hint, "__metadata__", ())
    if len(metadata) != 1 or not isinstance(metadata[0], str):
        raise TypeError(f"{where}: {hint!r} is not a kernel type (olb.kernel_declarations: Float64Array1D, ...)")
    argument_spec(metadata[0])
    return metadata[0]


def argument_spec(numba_type: str) -> tuple[np.dtype, int, bool]:
    """(dtype, dimensions, C order) of a kernel type: ``float64`` (0 dimensions), ``int64[::1]``,
    ``float64[:, ::1]`` (C order), ``float64[:]`` (any strides).

    >>> argument_spec("float64[:, ::1]")
    (dtype('float64'), 2, True)
    """
    base, _, rest = numba_type.partition("[")
    if base not in DTYPES:
        raise ValueError(f"kernel argument type {numba_type!r}: the dtype must be one of {', '.join(DTYPES)}")
    axes = rest.rstrip("]").split(",") if rest else []
    return DTYPES[base], len(axes), bool(axes) and axes[-1].strip() == "::1"


_INTEGERS = (int, np.integer, np.bool_)
_NUMBERS = (*_INTEGERS, float, np.floating)


def matches(value, dtype: np.dtype, ndim: int, c_order: bool) -> bool:
    """Whether ``value`` is of a kernel type: an array of that dtype, dimensions and order, or (``ndim`` 0) a
    number (an integer where the dtype is one)."""
    if not ndim:
        return isinstance(value, _INTEGERS if dtype.kind in "iub" else _NUMBERS)
    return (
        type(value) is np.ndarray
        and value.dtype == dtype
        and value.ndim == ndim
        and (not c_order or value.flags.c_contiguous)
    )


def describe(value) -> str:
    """What ``value`` is, for a message about a kernel argument."""
    if isinstance(value, np.ndarray):
        order = "C order" if value.flags.c_contiguous else "strided"
        return f"a {value.ndim}-d {value.dtype} array ({order})"
    return type(value).__name__


@cache
def declaring_modules(package: Path = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """Every module of ``package`` (olb) that declares kernels or records: its source file, and whether it
    declares kernels (``@kernel``; else records only). Found by reading the sources, so nothing is imported
    (2 ms for olb's; ``__pycache__``, where numba keeps its cache files, is not entered)."""
    found = {}
    for path in sorted(python_sources(package)):
        source = path.read_bytes()
        marks = {match.group(1) for match in _DECLARATION.finditer(source)} if b"@kernel" in source else set()
        if marks:
            found[module_name(path, package)] = (path, None in marks)
    return found


def kernel_modules() -> list[str]:
    """The modules that declare kernels (what :class:`olb.kernels.KernelModule` accepts)."""
    return [module for module, (_, has_kernels) in declaring_modules().items() if has_kernels]
