"""The environment in which glibc, numpy and OpenBLAS load the code they would pick on an x86-64 CPU without AVX2,
FMA or AVX-512, and numba compiles for such a CPU (``docs/speed.md``, "Bit-identical results"); ``make test-any-cpu`` runs the bit-exact tests in it::

    eval "$(python tests/any_cpu.py)"    # export it into a shell
"""

from __future__ import annotations

import shlex


def older_cpu_env() -> dict[str, str]:
    """glibc's libm without its FMA/AVX2 variants (``log2``, ``log``, ``exp``, ...), numpy without the targets it
    dispatches to beyond its baseline (its ufuncs and its x86-simd-sort ``argsort``), OpenBLAS with its SSE
    kernels, numba's code for a generic x86-64 (SSE2; cached beside the host's, compiled once)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return {
        "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2,-FMA,-AVX512F",
        "NPY_DISABLE_CPU_FEATURES": " ".join(t for t in __cpu_dispatch__ if __cpu_features__.get(t)),
        "OPENBLAS_CORETYPE": "Nehalem",
        "NUMBA_CPU_NAME": "generic",
    }


if __name__ == "__main__":
    print("\n".join(f"export {name}={shlex.quote(value)}" for name, value in older_cpu_env().items()))
