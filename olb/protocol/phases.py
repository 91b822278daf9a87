"""The phases of a protocol: which rows of a data set a stream visits, in which order, and whether each phase
updates the learner and feeds the reported metrics (the protocols are described in :mod:`olb.protocol`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from olb.data.dataset import Dataset

PROTOCOLS = ("train_test", "prequential_last20", "train_frozen", "prequential", "prequential_shuffled")
WHOLE_STREAM = ("prequential_last20", "prequential", "prequential_shuffled")  # over every row: no split needed


@dataclass(frozen=True)
class Phase:
    """Rows of the data set in stream order; ``block``: learned at once through ``learn_many``."""

    name: str
    rows: np.ndarray
    update: bool
    scored: bool
    block: bool = False


def make_phases(dataset: Dataset, protocol: str, loops: int = 1, rng: np.random.Generator | None = None) -> list[Phase]:
    """The phases of ``protocol`` over ``dataset`` (see olb.protocol's docstring)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; allowed: {', '.join(PROTOCOLS)}")
    if loops < 1:
        raise ValueError(f"loops must be a positive integer, got {loops}")
    if protocol == "prequential":
        return [Phase("stream", np.arange(dataset.n_examples), True, True)]
    if protocol in WHOLE_STREAM:
        order = (rng or np.random.default_rng(0)).permutation(dataset.n_examples)
        if protocol == "prequential_shuffled":
            return [Phase("stream", order, True, True)]
        cut = int(round(0.8 * len(order)))
        return [Phase("stream", order[:cut], True, False), Phase("last20", order[cut:], True, True)]
    if dataset.n_train is None:
        raise ValueError(f"protocol {protocol!r} needs a train/test split, and dataset {dataset.name!r} has none")
    train = np.arange(dataset.n_train)
    test = np.arange(dataset.n_train, dataset.n_examples)
    if protocol == "train_frozen":
        rng = rng or np.random.default_rng(0)
        orders = [rng.permutation(train) for _ in range(loops)]
    else:  # paper 000/004: the training split in file order, every loop
        orders = [train] * loops
    phases = [
        Phase("train" if loops == 1 else f"train_loop{i + 1}", order, True, False) for i, order in enumerate(orders)
    ]
    return phases + [Phase("test", test, protocol == "train_test", True)]


def learner_phases(learner, phases: list[Phase]) -> list[Phase]:
    """``phases`` with the learner's initial block (``init_fraction``) split off the first training phase."""
    fraction = float(getattr(learner, "init_fraction", 0.0) or 0.0)
    first = next((i for i, p in enumerate(phases) if p.update and not p.scored), None)
    if fraction <= 0 or first is None:
        return phases
    rows = phases[first].rows
    n_init = int(round(fraction * len(rows)))
    rest = Phase(phases[first].name, rows[n_init:], True, False)
    return [*phases[:first], Phase("init", rows[:n_init], True, False, block=True), rest, *phases[first + 1 :]]


def split_problem(protocol: str, dataset: str, conf_file: str, n_train: int | None) -> str | None:
    """Why ``protocol`` cannot run on a data set without a train/test split (``n_train`` None), and the fix."""
    if protocol in WHOLE_STREAM or n_train is not None:
        return None
    return (
        f"protocol {protocol!r} needs a train/test split, and data set {dataset!r} has none: declare one in "
        f"{conf_file} (split: {{kind: first_rows or seeded_permutation, n_train: ...}}, see docs/data.md) or use a "
        "protocol that needs none, such as protocol=prequential_last20"
    )
