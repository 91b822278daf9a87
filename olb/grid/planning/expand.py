"""Expansion of an experiment config into a :class:`~olb.grid.planning.plan.Plan`: each selected algorithm entry on
every data set, each configuration in the Cartesian product of its hyperparameter values, each seed.

Every problem is collected and reported together (one GridConfigError): the global checks of
:mod:`olb.grid.planning.configcheck`, then per entry its protocol, metrics against the learner's declared outputs,
splits against protocols, and every expanded configuration through the learner's ``validate`` (its ``Param``
ranges) and ``check_params`` (its rules across parameters and against the data set's registered shape).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from olb.grid.planning.config import SPEC_AXES, AlgorithmEntry, GridBase, hyperparameter_names
from olb.grid.planning.cost import machine_memory_mb
from olb.grid.planning.configcheck import (
    as_list,
    check_requirements,
    check_settings,
    collect,
    datasets_checked,
    entry_configs,
    expand_seeds,
    seed_count,
    import_plugins,
    metric_info,
    selected_entries,
    table_settings,
    unknown_name,
)
from olb.grid.planning.plan import Cell, CellKey, Plan, Problems, seed_cell_ids
from olb.data.registry import DatasetSpec
from olb.learners.base import OnlineLearner
from olb.learners.registry import get_algorithm
from olb.text import did_you_mean


PLANNING_KB_PER_CELL = 0.35
"""What planning holds per cell (a :class:`~olb.grid.planning.plan.Cell`, its id and settings): 0.32-0.34 kB measured over
grids of 100,000 and 300,000 cells."""


def plannable_cells(max_cells: int) -> int:
    """The cells a grid may have: ``max_cells``, at most as many as this machine's memory holds planned."""
    return min(max_cells, int(machine_memory_mb() * 1024 / PLANNING_KB_PER_CELL))


@dataclass(frozen=True)
class _Entry:
    """One algorithm entry's settings, shared by its cells on every data set."""

    key: str
    algorithm: str
    cls: type[OnlineLearner]
    label: str
    best_of: tuple
    protocol: str
    metrics: tuple
    base: dict  # hyperparameters on every data set
    per_dataset: dict  # data set name -> hyperparameters there
    only: list | None  # the data sets the entry runs on (None: all)
    select: Any
    paper_name: str | None

    @property
    def allowed_hp(self) -> list[str]:
        return sorted(set(self.cls.params) | set(SPEC_AXES))

    def info(self) -> dict:
        """The entry as :attr:`Plan.entries` describes it."""
        return {
            "label": self.label,
            "algorithm": self.algorithm,
            "paper_name": self.paper_name,
            "best_of": self.best_of,
            "select": self.select,
        }


@dataclass
class _Context:
    """What the expansion of every entry shares: the checked global settings."""

    cfg: GridBase
    seeds: list[int]
    datasets: list[str]
    specs: dict  # data set name -> olb.data.DatasetSpec
    shorthand: dict
    problems: Problems
    curve_every: int
    window: int
    n_seeds: int
    max_cells: int
    n_cells: int = 0  # the cells counted so far (past max_cells: counted, no longer expanded)
    used_shorthand: set = field(default_factory=set)


def plan_grid(cfg: GridBase) -> Plan:
    """Expand ``cfg`` into cells; every problem decidable from the configs and the data registry (not from
    the files: see :mod:`olb.grid.datacheck`) is collected and raised as one GridConfigError."""
    problems = Problems()
    plan = collect_plan(cfg, problems)
    problems.raise_if_any()
    assert plan is not None  # no problem, so a plan
    return plan


def collect_plan(cfg: GridBase, problems: Problems) -> Plan | None:
    """The plan of ``cfg``, or ``None`` when some problem (added to ``problems``) prevents it."""
    import_plugins(cfg.imports, problems)
    n_seeds, max_cells = seed_count(cfg.seeds), plannable_cells(cfg.max_cells)
    seeds = (collect(problems, expand_seeds, cfg.seeds) or [0]) if n_seeds <= max_cells else []  # too many: unlisted
    datasets, specs = datasets_checked(cfg, problems)
    entries_cfg = entry_configs(cfg, problems)
    selected = selected_entries(cfg, entries_cfg, problems)
    check_settings(cfg, problems)
    given = {name: getattr(cfg, name, None) for name in hyperparameter_names()}  # the schema's shorthand fields
    shorthand = {name: value for name, value in given.items() if value is not None}
    ctx = _Context(cfg, seeds, datasets, specs, shorthand, problems, cfg.curve_every, cfg.window, n_seeds, max_cells)
    cells: list[Cell] = []
    entries: dict[str, dict] = {}
    for key in selected:
        cells += _expand_entry(ctx, key, entries_cfg.get(key), entries)
    check_requirements({key: info["algorithm"] for key, info in entries.items()}, problems)
    warnings = [
        f"{hp}={shorthand[hp]!r} applies to none of the selected algorithms ({', '.join(selected)})"
        for hp in sorted(set(shorthand) - ctx.used_shorthand)
    ]
    if ctx.n_cells > ctx.max_cells:
        planning_mb = ctx.n_cells * PLANNING_KB_PER_CELL / 1024
        problems.add(
            f"the grid has {ctx.n_cells:,} cells, more than max_cells={cfg.max_cells:,} (planning them would hold "
            f"about {planning_mb:,.0f} MB, a run several times more); fewer seeds or hyperparameter values, or "
            "max_cells=N to plan it anyway"
            if ctx.max_cells == cfg.max_cells
            else f"the grid has {ctx.n_cells:,} cells: planning them would hold about {planning_mb:,.0f} MB, more "
            f"than this machine has ({machine_memory_mb():,.0f} MB); fewer seeds or hyperparameter values"
        )
    elif not cells and not problems.items:
        problems.add("the grid is empty: no (algorithm, data set) pair to run")
    table = table_settings(cfg, cells, problems, warnings) if cells else None
    if problems.items or table is None:
        return None
    table_metrics, select_by, lower = table
    return Plan(cells, datasets, entries, table_metrics, select_by, lower, warnings)


def _expand_entry(ctx: _Context, key: str, entry: AlgorithmEntry | None, entries: dict) -> list[Cell]:
    """The cells of one algorithm entry on every data set; its problems go to ``ctx.problems``."""
    from olb.protocol import metrics_fix, missing_outputs

    e = _entry_settings(ctx, key, entry)
    if e is None:
        return []
    entries[key] = e.info()
    for problem in missing_outputs(e.cls, e.metrics):
        ctx.problems.add(f"algorithm {key!r}: {problem}; {metrics_fix(e.cls)}")
    for name in [m for m in e.metrics if m not in metric_info()]:  # another learner's end-of-stream figure
        ctx.problems.add(f"algorithm {key!r}: {e.cls.name} does not report {name!r}; {metrics_fix(e.cls)}")
    cells: list[Cell] = []
    for ds in ctx.datasets:
        if e.only is None or ds in e.only:
            cells += _expand_on(ctx, e, ds)
    return cells


def _entry_settings(ctx: _Context, key: str, entry: AlgorithmEntry | None) -> _Entry | None:
    """The entry's settings with the command line's defaults filled in, or ``None`` when its protocol is not
    allowed; problems with its ``best_of``, data sets and ``select`` go to ``ctx.problems``."""
    from olb.data import dataset_names
    from olb.grid.selection import selection_settings
    from olb.protocol import PROTOCOLS, scored_metrics

    def given(name: str) -> Any:
        return getattr(entry, name) if entry is not None else None

    problems = ctx.problems
    algo = given("name") or key
    cls = get_algorithm(algo)
    best_of = tuple(given("best_of") or ())
    allowed_hp = sorted(set(cls.params) | set(SPEC_AXES))
    for hp in best_of:
        if hp not in allowed_hp:
            problems.add(
                f"algorithm.{key}.best_of: {hp!r} is not a hyperparameter of {algo}"
                f"{did_you_mean(hp, allowed_hp)}; allowed: {allowed_hp}"
            )
    protocol = given("protocol") or ctx.cfg.protocol or cls.default_protocol
    if protocol not in PROTOCOLS:
        problems.add(f"algorithm.{key}.protocol={protocol!r} is not allowed; allowed: {', '.join(PROTOCOLS)}")
        return None
    per_dataset, only = dict(given("per_dataset") or {}), given("datasets")
    for where, names in (("per_dataset", per_dataset), ("datasets", only or ())):
        for ds in names:
            if ds not in dataset_names():
                problems.add(f"algorithm.{key}.{where}: {unknown_name('data set', ds, dataset_names())}")
    try:
        select = selection_settings(given("select"), f"algorithm.{key}")
    except ValueError as err:
        problems.add(str(err))
        select = None
    metrics = scored_metrics(cls, ctx.cfg.metrics, cls.task)
    base = dict(given("params") or {})
    label = given("label") or key
    return _Entry(
        key, algo, cls, label, best_of, protocol, metrics, base, per_dataset, only, select, given("paper_name")
    )


def _expand_on(ctx: _Context, e: _Entry, ds: str) -> list[Cell]:
    """The cells of entry ``e`` on data set ``ds``, after checking that they fit it."""
    from olb.grid.selection import check_selection
    from olb.protocol import split_problem

    spec, problems = ctx.specs[ds], ctx.problems
    if spec.task != e.cls.task:
        problems.add(
            f"algorithm {e.key!r} ({e.algorithm}) solves {e.cls.task} tasks, data set {ds!r} is {spec.task}; "
            f"restrict it with algorithm.{e.key}.datasets=[...]"
        )
        return []
    no_split = split_problem(e.protocol, ds, spec.conf_file.name, spec.n_train)
    if no_split:
        problems.add(f"algorithm {e.key!r}: {no_split}")
        return []
    if e.select is not None:
        for problem in check_selection(e.select, e.cls, e.metrics, spec.n_train, f"algorithm.{e.key} on {ds}"):
            problems.add(problem)
    axes = _axes(ctx, e, ds)
    if axes is None:
        return []
    ctx.n_cells += math.prod(len(values) for values in axes.values()) * ctx.n_seeds
    return [] if ctx.n_cells > ctx.max_cells else _expand_configs(ctx, e, spec, axes)


def _axes(ctx: _Context, e: _Entry, ds: str) -> dict | None:
    """Hyperparameter -> its values on ``ds`` (entry params, then per-data-set ones, then the command line's
    shorthands), or ``None`` when one is unknown or malformed."""
    grid = dict(e.base)
    grid.update(e.per_dataset.get(ds, {}))
    for hp, value in ctx.shorthand.items():
        if hp in e.cls.params or hp in SPEC_AXES:
            grid[hp] = value
            ctx.used_shorthand.add(hp)
    allowed_hp = e.allowed_hp
    unknown = [hp for hp in grid if hp not in allowed_hp]
    for hp in unknown:
        ctx.problems.add(
            f"algorithm.{e.key}.params: {e.algorithm}: unknown hyperparameter {hp!r}"
            f"{did_you_mean(hp, allowed_hp)}; allowed: {allowed_hp}"
        )
    axes = {}
    for hp, v in grid.items():
        values = collect(ctx.problems, as_list, f"algorithm.{e.key}.params.{hp}", v)
        if values is None or hp in unknown:
            return None
        axes[hp] = values
    return axes


def _expand_configs(ctx: _Context, e: _Entry, spec: DatasetSpec, axes: dict) -> list[Cell]:
    """One cell per (configuration in the Cartesian product of ``axes``, seed), each checked against the
    learner's rules (``validate``, ``check_params`` with the data set's declared shape)."""
    from olb.learners.base import StreamShape

    shape = StreamShape(spec.shape.n_features, spec.shape.n_labels, spec.n_train)
    varying_keys = [hp for hp, vs in axes.items() if len(vs) > 1]
    cells = []
    for combo in itertools.product(*axes.values()):
        raw = dict(zip(axes, combo))
        loops = raw.pop("loops", 1)
        if isinstance(loops, bool) or not isinstance(loops, int) or loops < 1:
            ctx.problems.add(f"algorithm.{e.key}: loops={loops!r} is not allowed; allowed: an integer >= 1")
            continue
        try:
            params = e.cls.validate(raw)
        except ValueError as err:
            ctx.problems.add(f"algorithm.{e.key}: {err}")
            continue
        rules = e.cls.check_params(params, shape)
        if rules:
            ctx.problems.add(
                f"algorithm.{e.key} on {spec.name} ({spec.shape.n_features} features, "
                f"{spec.shape.n_labels} labels): {'; '.join(rules)}"
            )
            continue
        varying = tuple((hp, loops if hp == "loops" else params[hp]) for hp in varying_keys)
        key = CellKey(e.cls.name, spec.name, 0, params, e.protocol, loops, e.metrics, ctx.curve_every, ctx.window)
        for seed, cid in zip(ctx.seeds, seed_cell_ids(key, ctx.seeds)):
            cells.append(
                Cell(
                    cid,
                    e.key,
                    e.label,
                    e.cls.name,
                    spec.name,
                    seed,
                    params,
                    e.protocol,
                    loops,
                    e.metrics,
                    ctx.curve_every,
                    varying,
                    e.best_of,
                    e.paper_name,
                    ctx.window,
                )
            )
    return cells
