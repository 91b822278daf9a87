"""How far one last bit in the split evaluation's math moves the boosters' results (docs/speed.md,
"Bit-identical results").

A vectorized normal CDF or log2 would be several times cheaper than the per-value calls the forest makes
(they are half of a split attempt's time), but would differ from scipy's and glibc's functions in the last
bit on some arguments. This command measures what that costs in results: it runs the reduced cells of
``tests/regression`` with the forest's CDF and/or log2 moved down by one unit in the last place on about half
of their arguments (picked by the argument's digits, so the run is deterministic), and prints how far each
cell's metrics and learning curve move from the recorded references::

    python benchmarks/last_bit_sensitivity.py                  # both functions nudged
    python benchmarks/last_bit_sensitivity.py --nudge cdf      # the CDF only
    python benchmarks/last_bit_sensitivity.py --nudge log2     # log2 only

The nudged forest is a patched copy of its compiled modules (``olb/weak/vfdt_candidates.py``, where the CDF is
called, ``olb/weak/vfdt_merit.py``, where log2 is, and the modules that import them) in a temporary directory,
loaded in place of the real ones for this process only (their compiled code is built there too: expect ~20 s of
compiling).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "regression"))

ONE_ULP_DOWN = 1.0 - 2.0**-53  # below 1: one unit in the last place for values in [0.5, 1), at most one elsewhere

NUDGE = f'''

@njit(cache=True, nogil=True)
def _nudge(value, key):  # pragma: no cover - compiled
    """``value`` one unit in the last place lower for about half of the keys."""
    return value * {ONE_ULP_DOWN!r} if int(abs(key) * 1e7) % 2 == 1 else value


@njit(cache=True, nogil=True)
def _nudged_ndtr(z):  # pragma: no cover - compiled
    return _nudge(ndtr(z), z)
'''

# the nudged function -> (the module calling it, its call there, the nudged call)
PATCHES = {
    "cdf": (
        "olb.weak.vfdt_candidates",
        "return W * ndtr((t - mean) / sigma)",
        "return W * _nudged_ndtr((t - mean) / sigma)",
    ),
    "log2": ("olb.weak.vfdt_merit", "terms[c] = p * math.log2(p)", "terms[c] = p * _nudge(math.log2(p), p)"),
}
# the forest's compiled modules, each after the ones it imports: a nudged module's importers are loaded again
# after it, so that they call the nudged copy
CHAIN = ("olb.weak.vfdt_candidates", "olb.weak.vfdt_screen", "olb.weak.vfdt_merit", "olb.weak.vfdt_core")


def load_nudged_core(functions: list[str], directory: Path) -> None:
    """Load copies of the forest's compiled modules with ``functions`` nudged, in place of the real ones."""
    patches = {name: PATCHES[name] for name in functions}
    for module_name in CHAIN:
        path = ROOT / Path(*module_name.split(".")).with_suffix(".py")
        source = path.read_text()
        for module, original, nudged in patches.values():
            if module != module_name:
                continue
            if source.count(original) != 1:
                raise SystemExit(
                    f"last_bit_sensitivity: {path.relative_to(ROOT)} no longer contains {original!r} exactly once; "
                    "update PATCHES"
                )
            source = source.replace(original, nudged) + NUDGE
        copy = directory / f"{module_name.rsplit('.', 1)[1]}_nudged.py"
        copy.write_text(source)
        spec = importlib.util.spec_from_file_location(module_name, copy)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    os.environ["OLB_KERNELS"] = "jit"  # the forest then calls these modules' kernels (olb.kernels), not the extension


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nudge", nargs="+", choices=sorted(PATCHES), default=sorted(PATCHES))
    parser.add_argument("--data-dir", default=None, help="the data directory (default: OLB_DATA_DIR)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        load_nudged_core(args.nudge, Path(tmp))
        from cases import CASES, REFERENCE, compute

        recorded = json.loads(REFERENCE.read_text())
        print(f"{'cell':24s} {'same bits':>9s} {'max |metric change|':>20s} {'max |curve change|':>19s}")
        changed = 0
        for name, case in CASES:
            got, ref = compute(case, args.data_dir), recorded[name]
            metric = max(abs(got["metrics"][m] - ref["metrics"][m]) for m in ref["metrics"])
            curve = max(abs(a - b) for a, b in zip(got["curve"], ref["curve"]))
            changed += got != ref
            print(f"{name:24s} {got == ref!s:>9s} {metric:20.3g} {curve:19.3g}")
    print(
        f"{changed} of {len(CASES)} cells changed with {' and '.join(args.nudge)} one bit lower on ~half "
        "of the arguments"
    )


if __name__ == "__main__":
    main()
