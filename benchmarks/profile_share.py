"""Where a cell's stream time goes, from a py-spy profile: inside the compiled kernels' bodies (and how much of that
in numba's reference counting), at their call boundary, or outside them (the interpreter, numpy).

    py-spy record --native -r 250 -f raw -o profile.txt -- python -m olb.run algorithm=adaolmr dataset=emotions \
        seed=1 num_learners=100 authors_weights=true
    python benchmarks/profile_share.py profile.txt

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
from collections import Counter
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", type=Path, help="py-spy's raw output (record --native -f raw)")
    args = parser.parse_args()
    counts, total = shares(args.profile)
    if not total:
        raise SystemExit(f"{args.profile}: no sample inside the stream (olb.protocol.stream._run_stream)")
    counts["of which refcounts"] = counts["refcounts"]
    counts["body"] += counts["refcounts"]
    print(f"{total} samples in the stream: " + ", ".join(f"{k} {100 * counts[k] / total:.1f}%" for k in PLACES))


if __name__ == "__main__":
    main()
