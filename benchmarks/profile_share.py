"""Where a cell's stream time goes, from a py-spy profile: inside the compiled kernels' bodies, at their call
boundary, or outside them (the interpreter, numpy).

    py-spy record --native -r 250 -f raw -o profile.txt -- python -m olb.run algorithm=adaolmr dataset=emotions \
        seed=1 num_learners=100 authors_weights=true
    python benchmarks/profile_share.py profile.txt

Only the samples inside the stream (``olb.protocol.stream._run_stream``) count. A sample is in a kernel's body when its
stack holds a compiled function of olb (a native frame ``olb::...`` of the kernels' extension, with whatever it
calls: the C library's ``log2``, scipy's normal CDF); at the boundary when the deepest frame of the extension is
its argument wrapper (``_pycc_method_...``, numba's reference counting) or the argument checks of
``olb/kernels/loading.py``; outside otherwise.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

STREAM = "_run_stream (olb/protocol/stream.py"
CHECKS = "(olb/kernels/loading.py:"


def where(frames: list[str]) -> str:
    """``body``, ``boundary`` or ``outside`` for one sampled stack (outermost frame first)."""
    if any(frame.startswith("olb::") for frame in frames):
        return "body"
    if any("olb_kernels" in frame for frame in frames) or any(CHECKS in frame for frame in frames):
        return "boundary"
    return "outside"


def shares(profile: Path) -> tuple[Counter, int]:
    """Samples per place among the stream's, and their number."""
    counts: Counter = Counter()
    for line in profile.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if any(frame.startswith(STREAM) for frame in frames):
            counts[where(frames)] += int(count)
    return counts, sum(counts.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", type=Path, help="py-spy's raw output (record --native -f raw)")
    args = parser.parse_args()
    counts, total = shares(args.profile)
    if not total:
        raise SystemExit(f"{args.profile}: no sample inside the stream (olb.protocol.stream._run_stream)")
    print(f"{total} samples in the stream: " + ", ".join(f"{k} {100 * counts[k] / total:.1f}%" for k in
          ("body", "boundary", "outside")))  # fmt: skip


if __name__ == "__main__":
    main()
