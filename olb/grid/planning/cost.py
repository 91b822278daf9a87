"""Planning's cost model: the work a grid plans (learners' cost models on the data sets' shapes) and the
backend it chooses from it (``backend=auto``); each cell's peak memory (the process floor, the data and the
learner's model on the data set's shape), which Ray reserves per task, and the cells too big for any node."""

from __future__ import annotations

import functools
import json
import logging
import math
import os
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Protocol


from olb.grid.planning.config import BackendConfig, GridBase, cluster_address
from olb.grid.planning.plan import Cell, GridConfigError, Plan
from olb.learners.registry import get_cost_model

if TYPE_CHECKING:
    from olb.data.registry import DatasetSpec
    from olb.learners.base import StreamShape

log = logging.getLogger("olb.grid")


class StartedBackend(Protocol):
    """What :func:`check_memory` asks of a started backend."""

    name: str
    node_memory_mb: float


def registry_entry(dataset: str) -> DatasetSpec:
    """The data set's registry entry, its file parsed once per registry (planning asks for it per cell): the
    registry's folders are named by ``$OLB_CONF_DIR`` (:func:`olb.paths.conf_dirs`), which keys the cache
    (resolving the folders themselves would cost more than the rest of a cell's planning)."""
    return _registry_entry(dataset, os.environ.get("OLB_CONF_DIR", ""))


@functools.lru_cache(maxsize=256)
def _registry_entry(dataset: str, conf_dirs: str) -> DatasetSpec:
    from olb.data import dataset_spec

    return dataset_spec(dataset)


def _stream_shape(spec: DatasetSpec) -> StreamShape:
    """What a learner is told of the data set's stream for planning: its registered shape, the training rows
    (every row when it has no split) and its label cardinality where registered."""
    from olb.learners.base import StreamShape

    shape = spec.shape
    return StreamShape(shape.n_features, shape.n_labels, spec.n_train or shape.n_examples, shape.cardinality)


def planned_stream(
    algorithm: str, params: dict, dataset: str, loops: int = 1, protocol: str | None = None
) -> tuple[float, int, int]:
    """``(cost per example, training rows, rows of the stream)`` of one cell as the grid plans it: the learner's
    cost model (:func:`olb.learners.registry.get_cost_model`, resolved ``params``, the data set's registered shape) over a
    stream of ``loops`` passes over the training rows (every row when the data set has no split) then the test
    rows, a test row of ``protocol="train_frozen"`` predicted, not learned (:meth:`olb.learners.costs.CostModel.stream_cost_s`)."""
    from olb.protocol import WHOLE_STREAM

    spec = registry_entry(dataset)
    shape = _stream_shape(spec)
    n_train = spec.n_train or spec.shape.n_examples  # every row when the data set has no split
    loops = 1 if protocol in WHOLE_STREAM else loops  # one pass over the whole data set
    n_test = spec.shape.n_examples - n_train
    cost = get_cost_model(algorithm).stream_cost_s(params, shape, n_test, loops, frozen=protocol == "train_frozen")
    return cost, n_train, loops * n_train + n_test


def planned_cell_s(cell: Cell) -> float:
    """The CPU seconds the grid plans for one cell's stream, on an idle CPU (:func:`planned_stream`)."""
    cost, _, rows = planned_stream(cell.algorithm, cell.params, cell.dataset, cell.loops, cell.protocol)
    return cost * rows


PROCESS_FLOOR_MB = 500.0
"""Resident MB of a Ray worker before its cell's own memory: Python, numpy, scipy, numba's compiled kernels,
olb's and Ray's imports, and what the worker's earlier cells left behind (a worker runs many cells; one holding
more than this after a cell ends, :func:`worker_memory_bound_mb`). Peaks less
data and model on a local Ray (docs/grid.md, "Memory"): 340-430 MB over a 100-cell calibration grid, 430-530 MB
for the forest boosters over the 273-cell boosters' calibration grid; a fresh ``python -m olb.run`` process
starts at 140-170 MB, so its cells are over-predicted by ~330 MB."""

DATA_COPIES = 2
"""Float64 copies of a data set's rows a cell holds at its peak: as read, and scaled (``feature_scaling``)."""

ROW_FEATURES_CAP = 300
"""Features of a row counted in the data's memory at most: the registry does not record nonzeros, and the
registered data sets with more features are mostly sparse text (bibtex: 1,836 features, ~70 nonzeros a row); a
dense one (isolet: 617 features) is under-counted by ~20 MB a copy."""


def planned_memory_mb(algorithm: str, params: dict, dataset: str) -> float:
    """Predicted peak resident memory (MB) of one cell's whole process, as ``olb.run`` reports it: the process
    floor (and the runtime the learner starts in it, ``process_memory_mb``: MOA's JVM), the data set's rows and
    the learner's model (its cost model's ``model_memory_mb`` on the data set's registered shape)."""
    from olb.learners.costs import MB_PER_FLOAT

    spec = registry_entry(dataset)
    shape = spec.shape
    row = min(shape.n_features, ROW_FEATURES_CAP) + shape.n_labels  # the labels are held dense
    data = DATA_COPIES * MB_PER_FLOAT * shape.n_examples * row
    cost_model = get_cost_model(algorithm)
    model = cost_model.model_memory_mb(params, _stream_shape(spec))
    return PROCESS_FLOOR_MB + cost_model.process_memory_mb() + data + model


def planned_work(plan: Plan, unavailable: Collection[str] = ()) -> tuple[float, int]:
    """Rough CPU seconds and number of tasks of ``plan`` (for ``backend=auto``): every cell, finished ones too
    (resume is known only once the store is open), none on the ``unavailable`` data sets; for a cross-validated
    entry, every candidate's folds (each fold streams the training split once: 9/10 learned, 1/10 tested)
    and one candidate's cells (the average candidate's). :func:`planned_work_by_pair` has it per (entry, data set)."""
    pairs = planned_work_by_pair(plan, unavailable).values()
    return sum(seconds for seconds, _ in pairs), sum(tasks for _, tasks in pairs)


def planned_work_by_pair(plan: Plan, unavailable: Collection[str] = ()) -> dict[tuple[str, str], tuple[float, int]]:
    """(entry, data set) -> its CPU seconds and tasks as :func:`planned_work` plans them."""
    settings: dict[tuple[str, str], dict[tuple, list[Cell]]] = {}  # (entry, data set) -> setting -> its cells
    text = _params_text()
    for cell in plan.unique_cells:
        if cell.dataset not in unavailable:
            key = (text(cell.params), cell.loops)
            settings.setdefault((cell.entry, cell.dataset), {}).setdefault(key, []).append(cell)
    out: dict[tuple[str, str], tuple[float, int]] = {}
    for (entry, dataset), candidates in settings.items():
        streams = [
            (planned_stream(cells[0].algorithm, cells[0].params, dataset, cells[0].loops, cells[0].protocol), cells)
            for cells in candidates.values()
        ]
        seconds = sum(cost * rows * len(cells) for (cost, _, rows), cells in streams)
        tasks = sum(len(cells) for _, cells in streams)
        select = plan.entries[entry].get("select")
        if select:
            folds_s = 0.0
            for _, cells in streams:  # a fold's rows are learned (9/10) or tested (1/10): all at a learned row's
                cost, n_train, _ = planned_stream(cells[0].algorithm, cells[0].params, dataset)
                folds_s += cost * n_train * select["folds"]
            seconds, tasks = folds_s + seconds / len(streams), len(streams) + math.ceil(tasks / len(streams))
        out[(entry, dataset)] = (seconds, tasks)
    return out


def check_memory(cfg: GridBase, plan: Plan, unavailable: Collection[str], backend: StartedBackend) -> None:
    """On a started Ray backend: :func:`refuse_oversized` against the largest node's memory."""
    if backend.name == "ray":
        refuse_oversized(cfg, plan, unavailable, backend.node_memory_mb)


RAY_NODES = "any Ray node has ({mb:.0f} MB to hand out"
THIS_MACHINE = "this machine has ({mb:.0f} MB in all"


def machine_memory_mb() -> float:
    """This machine's physical memory, MB."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**20


def check_machine_memory(cfg: GridBase, plan: Plan, unavailable: Collection[str]) -> None:
    """Before any backend starts, on every backend whose cells run on this machine (serial, a local Ray; not a Ray
    cluster, whose nodes :func:`check_memory` asks once started): :func:`refuse_oversized` against this machine's
    memory, the same rule."""

    if cfg.backend.name == "serial" or not cluster_address(cfg.backend):
        refuse_oversized(cfg, plan, unavailable, machine_memory_mb(), where=THIS_MACHINE)


def refuse_oversized(
    cfg: GridBase,
    plan: Plan,
    unavailable: Collection[str],
    node_memory_mb: float,
    where: str = RAY_NODES,
) -> None:
    """GridConfigError naming every cell whose predicted peak memory (times ``backend.memory_factor``) exceeds
    ``node_memory_mb`` (a Ray node's memory to hand out, or ``where`` says whose), unless
    ``backend.refuse_oversized=false``."""
    if not cfg.backend.refuse_oversized or cfg.backend.memory_factor == 0:
        return
    lines = oversized(cfg.backend, plan, unavailable, node_memory_mb)
    if lines:
        raise GridConfigError(
            f"{len(lines)} setting(s) need more memory than {where.format(mb=node_memory_mb)}; "
            f"backend.memory_factor={cfg.backend.memory_factor:g}): " + "; ".join(lines) + ". Run them on a "
            f"bigger {'node' if where == RAY_NODES else 'machine'}, lower backend.memory_factor, or set "
            "backend.refuse_oversized=false to run them anyway"
            + (" (each then asks for a whole node's memory)." if where == RAY_NODES else ".")
        )


def oversized(cfg: BackendConfig, plan: Plan, unavailable: Collection[str], node_memory_mb: float) -> list[str]:
    """One line per setting (label on data set) whose request exceeds ``node_memory_mb``, with its prediction."""
    lines: dict[str, str] = {}
    for cell, predicted in planned_memory_by_cell(plan, unavailable):
        if memory_request_mb(predicted, cfg, math.inf) > node_memory_mb:
            name = f"{cell.config_label} on {cell.dataset}"
            lines.setdefault(name, f"{name}: predicted {predicted:.0f} MB")
    return list(lines.values())


def planned_memory_by_cell(plan: Plan, unavailable: Collection[str] = ()) -> list[tuple[Cell, float]]:
    """Each unique cell of ``plan`` off the ``unavailable`` data sets with its :func:`planned_memory_mb`,
    predicted once per setting."""
    memo: dict[tuple, float] = {}
    out = []
    text = _params_text()
    for cell in plan.unique_cells:
        if cell.dataset not in unavailable:
            key = (cell.algorithm, text(cell.params), cell.dataset)
            if key not in memo:
                memo[key] = planned_memory_mb(cell.algorithm, cell.params, cell.dataset)
            out.append((cell, memo[key]))
    return out


def worker_memory_bound_mb(cfg: BackendConfig) -> float:
    """The resident MB a Ray worker may keep after a cell (more: it ends, Ray starts a fresh one):
    ``backend.worker_memory_mb``, by default the floor every cell's prediction assumes; 0: no bound."""
    return PROCESS_FLOOR_MB if cfg.worker_memory_mb is None else float(cfg.worker_memory_mb)


def memory_request_mb(predicted_mb: float, cfg: BackendConfig, limit_mb: float) -> float:
    """What a cell asks Ray for: its predicted peak memory times ``backend.memory_factor``, at most ``limit_mb``
    (the largest node's; a bigger cell runs only with ``backend.refuse_oversized=false``)."""
    return min(predicted_mb * cfg.memory_factor, limit_mb)


def _params_text() -> Callable[[dict], str]:
    """``params`` -> their canonical text, written once per dict: a setting's cells (one per seed) share theirs,
    and the dicts live as long as the plan that holds them, so their ids stay theirs while it is read."""
    known: dict[int, str] = {}

    def text(params: dict) -> str:
        if id(params) not in known:
            known[id(params)] = json.dumps(params, sort_keys=True, default=str)
        return known[id(params)]

    return text
