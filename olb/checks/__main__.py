"""``python -m olb.checks [--import MODULE] [ALGORITHM ...]``: the contract and the cost model of registered learners
(default: all; ``--import``: a module of your own registering learners), checked on synthetic streams; prints a line
per learner, then the table of predicted against measured costs, and exits 1 naming the learners that failed."""

from __future__ import annotations

import argparse
import importlib
import sys

from olb.checks.contract import check_learner
from olb.checks.costs import CPU_FACTOR, MEMORY_FACTOR, MEMORY_RESOLUTION_MB, cost_table, measure_costs
from olb.learners.registry import algorithm_names, get_algorithm
from olb.text import did_you_mean


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m olb.checks", description=__doc__.splitlines()[0])
    parser.add_argument("algorithms", nargs="*", help="registered algorithm names (default: every one)")
    parser.add_argument("--costs-only", action="store_true", help="skip the contract checks")
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="a module to import first, which registers learners of its own (olb.learners.registry.register)",
    )
    args = parser.parse_args(argv)
    for module in args.imports:
        importlib.import_module(module)
    names = algorithm_names()
    unknown = [f"{name!r}{did_you_mean(name, names)}" for name in args.algorithms if name not in names]
    if unknown:
        parser.error(f"unknown algorithm(s) {', '.join(unknown)}; allowed: {', '.join(names)}")
    classes = [get_algorithm(name) for name in args.algorithms or algorithm_names()]
    failed: dict[str, str] = {}
    measurements = []
    for cls in classes:
        if not args.costs_only:
            try:
                check_learner(cls)
            except AssertionError as err:
                failed[cls.name] = f"contract: {err}"
                print(f"check_learner: {cls.__name__} ({cls.name}) FAILED: {err}", flush=True)
        measurement = measure_costs(cls)
        measurements.append(measurement)
        if measurement.problems():
            failed.setdefault(cls.name, "cost model: " + "; ".join(measurement.problems()))
    print(
        f"\ncost models against the synthetic stream (allowed: CPU within x{CPU_FACTOR:g}, memory within "
        f"x{MEMORY_FACTOR:g}, memory below {MEMORY_RESOLUTION_MB} MB counted as that):"
    )
    print(cost_table(measurements))
    for name, problem in failed.items():
        print(f"{name}: {problem}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
