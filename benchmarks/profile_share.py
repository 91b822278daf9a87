"""Where a cell's stream time goes, from a py-spy profile: inside the compiled kernels' bodies (and how much of that
in numba's reference counting), at their call boundary, or outside them (the interpreter, numpy).

    py-spy record --native -r 250 -f raw -o profile.txt -- python -m olb.run algorithm=adaolmr dataset=emotions \
        seed=1 num_learners=100 authors_weights=true
    python benchmarks/profile_share.py profile.txt

or, recording the profiles itself (py-spy on ``python -m olb.run``, a cell per booster and data set, seed 1, run
again in a fresh process until its streams gave ``MIN_SAMPLES`` samples) and storing the shares as a result table (with a .json record beside it: date, machine, load, samples) for the docs:

    python benchmarks/profile_share.py --boosters oza adaolm onlinembbm --out results/profile_share/table.csv

Only the samples inside the stream (``olb.protocol.stream._run_stream``) count, less those loading the kernels
(``olb.kernels.kernels``: a cell's timings leave that out, and a grid's workers load them before any cell). A
sample is in a kernel's body when its stack holds a compiled function of olb (a native frame ``olb::...`` of the
kernels' extension, with whatever it calls: the C library's ``log2``, scipy's normal CDF); of those, the ones in
numba's reference counting (``NRT_incref``, ``NRT_decref``) are counted apart, with the samples of
``NRT_incref`` whose callers py-spy's unwinding lost (no frame of the extension under the Python call: gdb shows
that the calls come from the compiled bodies, for the views and records they pass on). A sample is at the
boundary when the deepest frame of the extension is its argument wrapper (``_pycc_method_...``, with the parts of
numba's runtime it calls) or in the argument checks of ``olb/kernels/loading.py``; outside otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench_moa import machine, write_result_table

STREAM = "_run_stream (olb/protocol/stream.py"
CHECKS = "(olb/kernels/loading.py:"
LOADING = "kernels (olb/kernels/__init__.py:"
REFCOUNTS = ("NRT_incref (", "NRT_decref (")
WRAPPER = "._pycc_method_"
PLACES = ("body", "of which refcounts", "boundary", "outside")


def where(frames: list[str]) -> str:
    """The place of one sampled stack (outermost frame first): ``body``, ``refcounts`` (in the body, numba's
    reference counting), ``boundary`` or ``outside``."""
    in_body = any(frame.startswith("olb::") for frame in frames)
    lost_caller = frames[-1].startswith(REFCOUNTS[0]) and not any(frame.startswith(WRAPPER) for frame in frames)
    if (in_body or lost_caller) and frames[-1].startswith(REFCOUNTS):
        return "refcounts"
    if in_body:
        return "body"
    if any("olb_kernels" in frame for frame in frames) or any(CHECKS in frame for frame in frames):
        return "boundary"
    return "outside"


def shares(profile: Path) -> tuple[Counter, int]:
    """Samples per place among the stream's (the kernels' loading apart), and their number."""
    counts: Counter = Counter()
    for line in profile.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if any(frame.startswith(STREAM) for frame in frames) and not any(frame.startswith(LOADING) for frame in frames):
            counts[where(frames)] += int(count)
    return counts, sum(counts.values())


def place_shares(profiles: list[Path]) -> tuple[dict[str, float], int]:
    """The percentage of the streams' samples per place (``PLACES``: the bodies' including their reference counting)
    over ``profiles`` together, and the number of samples."""
    counts: Counter = Counter()
    for profile in profiles:
        counts.update(shares(profile)[0])
    total = sum(counts.values())
    if not total:
        raise SystemExit(
            f"{', '.join(map(str, profiles))}: no sample inside the stream (olb.protocol.stream._run_stream)"
        )
    counts["of which refcounts"] = counts["refcounts"]
    counts["body"] += counts["refcounts"]
    return {place: 100 * counts[place] / total for place in PLACES}, total


BOOSTERS = {"oza": "Oza", "adaolm": "Adaboost.OLM", "onlinembbm": "OnlineMBBM"}
DATASETS = ("balance", "cars", "mushroom", "nursery")
RATE = 250  # samples per second (at 1000, py-spy's native unwinding slowed OnlineMBBM's cells tenfold)
MIN_SAMPLES, MAX_CELLS = 400, 10  # a short stream's cell is recorded again (a fresh process each time)


def record(algorithm: str, dataset: str, trees: int, out: Path) -> None:
    """py-spy's raw profile (``out``) of one cell, seed 1: ``python -m olb.run`` in a fresh process."""
    cell = [sys.executable, "-m", "olb.run", f"algorithm={algorithm}", f"dataset={dataset}", "seed=1"]
    command = ["py-spy", "record", "--native", "-r", str(RATE), "-f", "raw", "-o", str(out), "--", *cell]
    subprocess.run([*command, f"num_learners={trees}"], check=True, capture_output=True, timeout=3600)


def measure(boosters: list[str], datasets: list[str], trees: int, out: Path) -> None:
    """Every booster's cell on every data set profiled, its shares printed and stored (``out`` and its .json)."""
    load_before, figures, records = os.getloadavg()[0], [], []
    with tempfile.TemporaryDirectory() as scratch:
        for algorithm in boosters:
            for dataset in datasets:
                profiles: list[Path] = []
                while len(profiles) < MAX_CELLS and (not profiles or place_shares(profiles)[1] < MIN_SAMPLES):
                    profiles.append(Path(scratch) / f"{algorithm}-{dataset}-{len(profiles)}.txt")
                    record(algorithm, dataset, trees, profiles[-1])
                percent, total = place_shares(profiles)
                label = f"{BOOSTERS[algorithm]}, {trees} trees"
                outside = percent["outside"] + percent["boundary"]
                print(f"{dataset:9} {label:24} {_summary(percent, total)}")
                figures += [(dataset, label, "outside + boundary %", outside)]
                figures += [(dataset, label, "reference counting %", percent["of which refcounts"])]
                records.append(
                    {"dataset": dataset, "learner": label, "cells": len(profiles), "samples": total, **percent}
                )
    write_result_table(out, figures)
    entry = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(), "rate_hz": RATE}
    entry["load_average_before_after"] = [load_before, os.getloadavg()[0]]
    out.with_suffix(".json").write_text(json.dumps({**entry, "results": records}, indent=1) + "\n")


def _summary(percent: dict[str, float], total: int) -> str:
    return f"{total} samples in the stream: " + ", ".join(f"{k} {percent[k]:.1f}%" for k in PLACES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", type=Path, nargs="?", help="py-spy's raw output (record --native -f raw)")
    parser.add_argument("--boosters", nargs="+", choices=list(BOOSTERS), help="record these boosters' profiles")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("results/profile_share/table.csv"))
    args = parser.parse_args()
    if args.boosters:
        measure(args.boosters, args.datasets, args.trees, args.out)
    elif args.profile:
        print(_summary(*place_shares([args.profile])))
    else:
        parser.error("give a profile, or --boosters to record them")


if __name__ == "__main__":
    main()
