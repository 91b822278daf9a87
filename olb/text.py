"""Small text helpers shared by every layer (data, learners, grid): "did you mean" hints for unknown names.

This module imports nothing of olb, so the data layer and the learners can both use it.
"""

from __future__ import annotations

import difflib


def did_you_mean(name: str, known) -> str:
    """``" (did you mean 'x'?)"`` for the closest known name, or ``""``: the fewest edits (a swap of two
    neighbouring characters counting less than any other edit, so ``adaolrm`` gives ``adaolmr``), at most a
    third of the name's length; else difflib's closest match."""
    name, known = str(name), [str(k) for k in known]
    scored = sorted((edit_distance(name.lower(), k.lower()), k) for k in known)
    if scored and scored[0][0] <= max(1, len(name) // 3):
        return f" (did you mean {scored[0][1]!r}?)"
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def edit_distance(a: str, b: str) -> float:
    """Optimal-string-alignment (restricted Damerau-Levenshtein) distance: insertions, deletions and
    substitutions cost 1, a swap of two neighbouring characters 0.5."""
    previous2: list[float] = []  # the row before previous (read from i = 2 on)
    previous: list[float] = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current: list[float] = [0] * (len(b) + 1)
        current[0] = i
        for j in range(1, len(b) + 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1] and a[i - 1] != b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 0.5)
        previous2, previous = previous, current
    return previous[-1]
