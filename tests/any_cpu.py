"""The environment in which glibc, numpy and OpenBLAS load the code they would pick on an x86-64 CPU without AVX2,
FMA or AVX-512, and numba compiles for such a CPU (``docs/speed.md``, "Bit-identical results"); ``make test-any-cpu`` runs the bit-exact tests in it::

    eval "$(python tests/any_cpu.py)"    # export it into a shell
"""

from __future__ import annotations

import shlex


def older_cpu_env() -> dict[str, str]:
    """:func:`baseline_library_env` and numba's code for a generic x86-64 (SSE2; cached beside the host's, compiled
    once)."""
    return {**baseline_library_env(), "NUMBA_CPU_NAME": "generic"}


def baseline_library_env() -> dict[str, str]:
    """glibc's libm without its FMA/AVX2 variants (``log2``, ``log``, ``exp``, ...; FMA4 is AMD's of 2011-2014),
    numpy without any of the targets it dispatches to beyond its baseline (its ufuncs and its x86-simd-sort
    ``argsort``; all of them, not only this CPU's, so that the value is the same on every machine and in a process
    that already disabled some), OpenBLAS with its SSE kernels on one thread (a threaded product may split a sum
    by the number of cores)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    return {
        "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2,-FMA,-FMA4,-AVX512F",
        "NPY_DISABLE_CPU_FEATURES": " ".join(__cpu_dispatch__),
        "OPENBLAS_CORETYPE": "Nehalem",
        "OPENBLAS_NUM_THREADS": "1",
    }


if __name__ == "__main__":
    print("\n".join(f"export {name}={shlex.quote(value)}" for name, value in older_cpu_env().items()))
