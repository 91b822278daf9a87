"""Checks of an experiment config decidable from the configs and the data registry, before any work starts.

Each check adds its problems to a :class:`~olb.grid.planning.plan.Problems` (one line per culprit naming the key and
the allowed values, with "did you mean"): unknown keys; modules in ``imports``; seeds; data set, algorithm and
metric names; protocols; backend settings; table settings. The checks of each algorithm entry against the data
sets and the learner's rules run while it is expanded (:mod:`olb.grid.planning.expand`); the files themselves (present,
checksums, parseable) are checked by :mod:`olb.grid.datacheck`.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Iterable
from collections.abc import Callable
from typing import Any, TypeVar

from olb.grid.planning.config import BACKENDS, AlgorithmEntry, GridBase, algorithm_entry
from olb.grid.planning.plan import RUNTIME_COLUMNS, Cell, GridConfigError, Problems
from olb.learners.registry import algorithm_names, get_algorithm
from olb.text import did_you_mean

T = TypeVar("T")


def import_plugins(modules: Iterable[str] | None, problems: Problems) -> None:
    for name in modules or ():
        try:
            importlib.import_module(name)
        except ImportError as err:
            problems.add(f"imports: cannot import {name!r}: {err}")


_SEEDS_ALLOWED = "allowed: a positive integer n (seeds 0..n-1) or a non-empty list of distinct integers >= 0"


def seed_count(seeds: Any) -> int:
    """How many seeds ``seeds`` names (before :func:`expand_seeds` lists them); 1 for a value it refuses."""
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        return max(seeds, 1)
    return len(seeds) if isinstance(seeds, list) and seeds else 1


def expand_seeds(seeds: Any) -> list[int]:
    if isinstance(seeds, int) and not isinstance(seeds, bool) and seeds >= 1:
        return list(range(seeds))
    if (
        isinstance(seeds, list)
        and seeds
        and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)
    ):
        if len(set(seeds)) != len(seeds):
            raise GridConfigError(f"seeds={seeds}: repeated seed; {_SEEDS_ALLOWED}")
        return list(seeds)
    raise GridConfigError(f"seeds={seeds!r}: {_SEEDS_ALLOWED}")


def as_list(key: str, value: Any) -> list:
    if isinstance(value, dict):
        raise GridConfigError(f"{key}: a hyperparameter takes a value or a list of values, got a mapping {value!r}")
    values = value if isinstance(value, list) else [value]
    if not values:
        raise GridConfigError(f"{key}: empty list of values; allowed: a value or a non-empty list")
    return values


def metric_info() -> dict:
    from olb.metrics import METRICS

    return METRICS


def unknown_name(what: str, name: str, known: Collection[str]) -> str:
    return f"unknown {what} {name!r}{did_you_mean(name, known)}; allowed: {', '.join(sorted(known))}"


def collect(problems: Problems, fn: Callable[..., T], *args: object) -> T | None:
    """``fn(*args)``, or ``None`` with its GridConfigError recorded."""
    try:
        return fn(*args)
    except GridConfigError as err:
        problems.add(str(err))
        return None


def datasets_checked(cfg: GridBase, problems: Problems) -> tuple[list[str], dict]:
    from olb.data import DataError, dataset_names, dataset_spec

    datasets = list(cfg.datasets or [])
    if not datasets:
        problems.add("datasets: empty; allowed: " + ", ".join(dataset_names()))
    if len(set(datasets)) != len(datasets):
        problems.add(f"datasets={datasets}: repeated data set")
    specs = {}
    for name in dict.fromkeys(datasets):
        if name not in dataset_names():
            problems.add(f"datasets: {unknown_name('data set', name, dataset_names())}")
            continue
        try:
            specs[name] = dataset_spec(name)
        except DataError as err:  # a malformed registry entry
            problems.add(f"datasets: {name}: {err}")
    return [name for name in dict.fromkeys(datasets) if name in specs], specs


def entry_configs(cfg: GridBase, problems: Problems) -> dict[str, AlgorithmEntry]:
    allowed = ", ".join(AlgorithmEntry.__dataclass_fields__)
    entries = {}
    for key, raw in cfg.algorithm.items():
        if not isinstance(raw, dict):
            problems.add(f"algorithm.{key}: expected a mapping with keys {allowed}, got {raw!r}")
            continue
        try:
            entries[key] = algorithm_entry(raw)
        except ValueError as err:
            problems.add(f"algorithm.{key}: {err}; allowed keys: {allowed}")
    return entries


def selected_entries(cfg: GridBase, entries_cfg: dict[str, AlgorithmEntry], problems: Problems) -> list[str]:
    selected = list(cfg.algorithms or [])
    known = sorted(set(entries_cfg) | set(algorithm_names()))
    if not selected:
        problems.add("algorithms: empty; allowed: " + ", ".join(known))
    if len(set(selected)) != len(selected):
        problems.add(f"algorithms={selected}: repeated entry")
    ok = []
    for key in dict.fromkeys(selected):
        entry = entries_cfg.get(key)
        algo = entry.name if entry is not None and entry.name else key
        if key in cfg.algorithm and entry is None:
            continue  # malformed entry, reported already
        if algo not in algorithm_names():
            problems.add(f"algorithms: {unknown_name('algorithm', key if algo == key else algo, known)}")
            continue
        ok.append(key)
    return ok


def confined_name(name: str) -> str:
    """``name`` (the grid's, a folder under ``outputs/``), or GridConfigError if it would leave that folder (as a
    data file's registered path may not leave its data dir: :func:`olb.data.registry.path_problem`)."""
    from olb.data.registry import path_problem

    problem = path_problem(name, "the grid's name", "the outputs folder", "table3")
    if problem:
        raise GridConfigError(f"name: {problem}")
    return name


def check_requirements(algorithms: dict[str, str], problems: Problems) -> None:
    """What this machine lacks to run the entries' algorithms (entry key -> algorithm name): one line per missing
    thing, naming the entries that need it and what to install."""
    needed: dict[str, list[str]] = {}
    for key, name in algorithms.items():
        for problem in get_algorithm(name).missing_requirements():
            needed.setdefault(problem, []).append(key)
    for problem, keys in needed.items():
        problems.add(f"algorithm{'s' if len(keys) > 1 else ''} {', '.join(map(repr, keys))}: {problem}")


def check_paths(cfg: GridBase, problems: Problems) -> None:
    """The grid's ``name`` stays inside ``outputs/``, and ``export`` inside the folder it names (no ``..``)."""
    from olb.data.registry import path_problem

    collect(problems, confined_name, cfg.name)
    export = str(cfg.export or "").strip("/")
    problem = path_problem(export, "an export folder", "the folder it names", "results/NAME") if export else None
    if problem:
        problems.add(f"export={cfg.export!r}: {problem}")


def check_settings(cfg: GridBase, problems: Problems) -> None:
    from olb.protocol import PROTOCOLS

    check_paths(cfg, problems)
    METRICS = metric_info()
    if cfg.protocol is not None and cfg.protocol not in PROTOCOLS:
        problems.add(
            f"protocol={cfg.protocol!r} is not allowed{did_you_mean(cfg.protocol, PROTOCOLS)}; "
            f"allowed: {', '.join(PROTOCOLS)}"
        )
    known = {*METRICS, *(m for name in algorithm_names() for m in get_algorithm(name).report_metrics)}
    for m in cfg.metrics or ():
        if m not in known:
            problems.add(f"metrics: {unknown_name('metric', m, known)}")
    if cfg.backend.name not in BACKENDS:
        problems.add(f"backend.name={cfg.backend.name!r} is not allowed; allowed: {', '.join(BACKENDS)}")
    if cfg.backend.num_cpus is not None and cfg.backend.num_cpus < 1:
        problems.add(f"backend.num_cpus={cfg.backend.num_cpus} is out of range; allowed: null or an integer >= 1")
    if cfg.backend.max_retries < 0:
        problems.add(f"backend.max_retries={cfg.backend.max_retries} is out of range; allowed: an integer >= 0")
    if cfg.backend.memory_factor < 0:
        problems.add(f"backend.memory_factor={cfg.backend.memory_factor} is out of range; allowed: a number >= 0")
    if cfg.backend.memory_mb is not None and cfg.backend.memory_mb < 1:
        problems.add(f"backend.memory_mb={cfg.backend.memory_mb} is out of range; allowed: null or an integer >= 1")
    if cfg.backend.worker_memory_mb is not None and not cfg.backend.worker_memory_mb >= 0:
        problems.add(
            f"backend.worker_memory_mb={cfg.backend.worker_memory_mb} is out of range; allowed: null (the process "
            "floor each cell's predicted memory assumes), 0 (workers keep what they hold) or a number of MB > 0"
        )
    if cfg.curve_every < 1:
        problems.add(f"curve_every={cfg.curve_every} is out of range; allowed: an integer >= 1")
    if cfg.window < 0:
        problems.add(f"window={cfg.window} is out of range; allowed: an integer >= 0 (0: no windowed curve)")


def table_settings(
    cfg: GridBase, cells: list[Cell], problems: Problems, warnings: list[str]
) -> tuple[list[str], str, dict[str, bool]]:
    """The table's metrics, the metric ``best_of`` selects by, and which direction is better. When ``metrics``
    names none of ``table.metrics``, it replaces those the cells do not measure (an experiment's table follows
    ``metrics=[...]`` from the command line)."""
    METRICS = metric_info()
    kinds = {(c.algorithm, c.metrics): c for c in cells}  # what a cell measures depends on these alone
    measured = [c.measured for c in kinds.values()]
    cell_metrics = sorted(
        {m for ms in measured for m in ms}, key=lambda m: min(ms.index(m) for ms in measured if m in ms)
    )
    table_metrics = list(cfg.table.metrics or [*cell_metrics, "runtime_s"])
    dropped = [m for m in table_metrics if m not in cell_metrics and m not in RUNTIME_COLUMNS]
    if cfg.metrics and dropped and not set(cfg.metrics) & set(table_metrics):  # the table is for other metrics
        kept = [m for m in table_metrics if m not in dropped]
        added = [m for m in cfg.metrics if m not in kept]
        first_runtime = next((i for i, m in enumerate(kept) if m in RUNTIME_COLUMNS), len(kept))
        table_metrics = [*kept[:first_runtime], *added, *kept[first_runtime:]]
        warnings.append(
            f"table.metrics: {', '.join(dropped)} not measured with metrics={list(cfg.metrics)}: the table shows "
            f"{', '.join(table_metrics)} (set table.metrics=[...] to choose)"
        )
    for m in table_metrics:
        if m not in cell_metrics and m not in RUNTIME_COLUMNS:
            problems.add(
                f"table.metrics: {m!r} is not measured by the cells; allowed: "
                f"{', '.join([*cell_metrics, *RUNTIME_COLUMNS])}"
            )
    select_by = cfg.table.select_by or table_metrics[0]
    if cfg.metrics and select_by in dropped:
        select_by = table_metrics[0]
        warnings.append(f"table.select_by={cfg.table.select_by}: not measured; best_of selects by {select_by}")
    if select_by not in table_metrics:
        problems.add(f"table.select_by={select_by!r}; allowed: one of table.metrics {table_metrics}")
    axes_allowed = ("dataset", "algorithm", "metric")
    for where in ("rows", "columns"):
        for axis in getattr(cfg.table, where):
            if axis not in axes_allowed:
                problems.add(f"table.{where}: {axis!r} is not allowed; allowed: {', '.join(axes_allowed)}")
    if set(cfg.table.rows) & set(cfg.table.columns):
        problems.add(f"table.rows {list(cfg.table.rows)} and table.columns {list(cfg.table.columns)} overlap")
    reported = {
        m: lower for algo in {c.algorithm for c in cells} for m, lower in get_algorithm(algo).report_metrics.items()
    }
    lower = {m: METRICS[m].lower_is_better if m in METRICS else reported.get(m, True) for m in table_metrics}
    return table_metrics, select_by, lower
