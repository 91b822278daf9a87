"""Planning's cost model: the work a grid plans (learners' cost per example on the data sets' shapes), and the
backend it chooses from it (``backend=auto``)."""

from __future__ import annotations

import json
import logging
import math

from omegaconf import DictConfig

from olb.grid.backends import choose_backend, make_backend
from olb.grid.plan import Cell, Plan
from olb.registry import get_algorithm

log = logging.getLogger("olb.grid")


def planned_stream(algorithm: str, params: dict, dataset: str, loops: int = 1) -> tuple[float, int, int]:
    """``(cost per example, training rows, rows of the stream)`` of one cell as the grid plans it: the learner's
    ``cost_per_example_s`` (resolved ``params``) on the data set's registered shape, and a stream of ``loops``
    passes over the training rows (every row when the data set has no split) then the test rows."""
    from olb.data import dataset_spec
    from olb.learners.base import StreamShape

    spec = dataset_spec(dataset)
    n_train = spec.n_train or spec.shape.n_examples
    cost = get_algorithm(algorithm).cost_per_example_s(
        params, StreamShape(spec.shape.n_features, spec.shape.n_labels, n_train)
    )
    return cost, n_train, loops * n_train + spec.shape.n_examples - n_train


def planned_work(plan: Plan, unavailable=()) -> tuple[float, int]:
    """Rough CPU seconds and number of tasks of ``plan`` (for ``backend=auto``): every cell, finished ones too
    (resume is known only once the store is open), none on the ``unavailable`` data sets; for a cross-validated
    entry, every candidate's folds (each fold streams the training split once: 9/10 learned, 1/10 tested)
    and one candidate's cells (the average candidate's)."""
    settings: dict[tuple[str, str], dict[str, list[Cell]]] = {}  # (entry, data set) -> setting -> its cells
    for cell in plan.unique_cells:
        if cell.dataset not in unavailable:
            key = json.dumps([cell.params, cell.loops], sort_keys=True, default=str)
            settings.setdefault((cell.entry, cell.dataset), {}).setdefault(key, []).append(cell)
    seconds, tasks = 0.0, 0
    for (entry, dataset), candidates in settings.items():
        streams = [
            (planned_stream(cells[0].algorithm, cells[0].params, dataset, cells[0].loops), len(cells))
            for cells in candidates.values()
        ]
        cells_s = sum(cost * rows * n for (cost, _, rows), n in streams)
        n_cells = sum(n for _, n in streams)
        select = plan.entries[entry].get("select")
        if select:
            seconds += sum(cost * n_train * select["folds"] for (cost, n_train, _), _ in streams)
            tasks += len(streams)
            cells_s, n_cells = cells_s / len(streams), math.ceil(n_cells / len(streams))
        seconds += cells_s
        tasks += n_cells
    return seconds, tasks


def choose(cfg: DictConfig, plan: Plan, unavailable=()):
    """The backend for ``plan`` (``backend=auto`` chooses, see olb.grid.backends.choose_backend) and why; the
    cells of ``unavailable`` data sets are no work."""
    work_s, n_tasks = planned_work(plan, unavailable)
    name, reason = choose_backend(cfg.backend, work_s, n_tasks)
    log.info("olb.grid: backend %s: %s", name, reason)
    return make_backend(cfg.backend, name), reason
