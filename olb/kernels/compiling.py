"""The build of olb's kernels (run as ``python -m olb.kernels``): every declared kernel compiled ahead of time,
with numba's own compiler for this machine's processor, into one extension module (``numba.pycc``) and its
manifest, in a private folder renamed into place whole."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from olb.cache import CacheFolderError, private_dir
from olb.kernel_declarations import (
    DTYPES,
    KERNELS,
    PACKAGE,
    RECORDS,
    ArgumentType,
    argument_spec,
    declaring_modules,
    kernel_modules,
)
from olb.kernels.building import compilers
from olb.kernels.key import build_key, extension_folder, target_cpu
from olb.kernels.loading import EXTENSION, SCIPY_SYMBOLS, export_name, verified

_SHIM = "".join(
    f"double (*{symbol}_target)(double) = 0;\ndouble {symbol}(double x) {{ return {symbol}_target(x); }}\n"
    for symbol in SCIPY_SYMBOLS
)


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
            manifest = verified(folder, warn=False)
            if manifest is not None:
                return manifest
            aside = Path(tempfile.mkdtemp(prefix=f".{folder.name}.old-", dir=folder.parent))
            try:
                os.rename(folder, aside / "old")
            except FileNotFoundError:  # moved by another build meanwhile
                pass
            shutil.rmtree(aside, ignore_errors=True)
            continue
        manifest = verified(folder, warn=False)
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
        parser.error(f"--key {options.key}: this olb ({Path(__file__).parents[1]}) gives {build_key()}")
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
