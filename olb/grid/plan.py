"""Expansion of an experiment config into cells, and every check decidable from the configs and the data
registry, before any work starts.

All problems are collected and reported together (one GridConfigError, one line per culprit naming the key
and the allowed values, with "did you mean"): unknown keys; modules in ``imports``; seeds; data set,
algorithm and metric names; protocols; metrics against each learner's declared outputs; splits against
protocols; every expanded configuration through the learner's ``validate`` (its ``Param`` ranges) and
``check_params`` (its rules across parameters and against the data set's registered shape); table settings.
The files themselves (present, checksums, parseable) are checked by :mod:`olb.grid.datacheck`.
"""

from __future__ import annotations

import hashlib
import importlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from olb.grid.config import BACKENDS, SPEC_AXES, AlgorithmEntry, hyperparameter_names
from olb.registry import algorithm_names, get_algorithm
from olb.text import did_you_mean

CELL_ID_VERSION = 1
RUNTIME_COLUMNS = ("runtime_s", "cpu_s", "compile_s", "train_us_per_example", "peak_rss_mb")


class GridConfigError(ValueError):
    """The experiment config is invalid; raised before any cell runs."""


@dataclass(frozen=True)
class Cell:
    """One cell of the grid: a fully resolved CellSpec plus where it sits in the table."""

    cell_id: str
    entry: str  # key of the algorithm entry in the experiment
    label: str  # entry label (table column), without the varying hyperparameters
    algorithm: str
    dataset: str
    seed: int
    params: dict  # resolved hyperparameters (defaults filled in)
    protocol: str
    loops: int
    metrics: tuple[str, ...]
    curve_every: int
    varying: tuple[tuple[str, Any], ...] = ()  # hyperparameters that vary within (entry, dataset), with values
    best_of: tuple[str, ...] = ()
    paper_name: str | None = None

    @property
    def measured(self) -> tuple[str, ...]:
        """Everything the cell records besides runtimes: its metrics, then the learner's end-of-stream figures
        (``OnlineLearner.report_metrics``)."""
        return (*self.metrics, *get_algorithm(self.algorithm).report_metrics)

    def spec_dict(self, data_dir=None, verify_checksums: bool = True) -> dict:
        """Keyword arguments of :class:`olb.run.CellSpec`."""
        return {
            "algorithm": self.algorithm,
            "dataset": self.dataset,
            "seed": self.seed,
            "params": dict(self.params),
            "protocol": self.protocol,
            "loops": self.loops,
            "metrics": tuple(self.metrics),
            "curve_every": self.curve_every,
            "data_dir": data_dir,
            "verify_checksums": verify_checksums,
        }

    @property
    def config_label(self) -> str:
        """The table label: entry label plus the varying hyperparameters that are not selected over."""
        extra = [f"{k}={_fmt(v)}" for k, v in self.varying if k not in self.best_of]
        return f"{self.label} ({', '.join(extra)})" if extra else self.label

    @property
    def run_name(self) -> str:
        extra = "".join(f" {k}={_fmt(v)}" for k, v in self.varying)
        return f"{self.label}{extra} {self.dataset} s{self.seed}"

    def record(self) -> dict:
        """Flat description for cells.csv."""
        row = {"cell_id": self.cell_id, "label": self.label, "algorithm": self.algorithm, "dataset": self.dataset}
        row.update(self.params)
        row.update({"loops": self.loops, "protocol": self.protocol, "seed": self.seed})
        return row


@dataclass
class Plan:
    cells: list[Cell]
    datasets: list[str]
    entries: dict[str, dict]  # entry key -> {"label", "algorithm", "paper_name", "best_of"}
    table_metrics: list[str]
    select_by: str
    lower_is_better: dict[str, bool]
    warnings: list[str] = field(default_factory=list)

    @property
    def unique_cells(self) -> list[Cell]:
        seen, out = set(), []
        for c in self.cells:
            if c.cell_id not in seen:
                seen.add(c.cell_id)
                out.append(c)
        return out


def _fmt(v: Any) -> str:
    return repr(v) if isinstance(v, str) else str(v)


def _plain(value: Any) -> Any:
    if isinstance(value, (DictConfig, ListConfig)):
        return OmegaConf.to_container(value, resolve=True)
    return value


def cell_id(
    algorithm: str,
    dataset: str,
    seed: int,
    params: dict,
    protocol: str,
    loops: int,
    metrics: tuple[str, ...],
    curve_every: int,
) -> str:
    """Stable id of a cell: sha1 of the canonical JSON of everything that determines its result.

    ``data_dir`` (where the files are) and the entry's label are not part of it, nor is the data read: a
    cell's identity is (cell id, data fingerprint), see :mod:`olb.grid.datacheck`.
    """
    payload = {
        "v": CELL_ID_VERSION,
        "algorithm": algorithm,
        "dataset": dataset,
        "seed": int(seed),
        "params": {k: params[k] for k in sorted(params)},
        "protocol": protocol,
        "loops": int(loops),
        "metrics": list(metrics),
        "curve_every": int(curve_every),
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


class Problems:
    """Every problem found before work starts; :meth:`raise_if_any` reports them all in one GridConfigError."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, message: str) -> None:
        if message not in self.items:
            self.items.append(message)

    def raise_if_any(self) -> None:
        if len(self.items) == 1:
            raise GridConfigError(self.items[0])
        if self.items:
            lines = "\n".join(f"  - {item}" for item in self.items)
            raise GridConfigError(f"{len(self.items)} problems, nothing was run:\n{lines}")


def check_keys(cfg: DictConfig, problems: Problems) -> None:
    """Keys the schema does not know (Hydra's ``+key=value`` adds them even to a structured config)."""
    import dataclasses
    import typing

    from olb.grid.config import make_schema

    def walk(node: DictConfig, schema: type, where: str) -> None:
        fields = {f.name: f for f in dataclasses.fields(schema)}
        for key in node:
            if key not in fields:
                problems.add(f"{where}{key}: unknown key{did_you_mean(key, fields)}; allowed: {', '.join(fields)}")
                continue
            sub = fields[key].type
            if dataclasses.is_dataclass(sub) and isinstance(node[key], DictConfig):
                walk(node[key], sub, f"{where}{key}.")

    schema = make_schema()
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        f.type = hints.get(f.name, f.type)
    walk(cfg, schema, "")


def import_plugins(modules, problems: Problems) -> None:
    for name in modules or ():
        try:
            importlib.import_module(name)
        except ImportError as err:
            problems.add(f"imports: cannot import {name!r}: {err}")


_SEEDS_ALLOWED = "allowed: a positive integer n (seeds 0..n-1) or a non-empty list of distinct integers >= 0"


def expand_seeds(seeds: Any) -> list[int]:
    seeds = _plain(seeds)
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


def _as_list(key: str, value: Any) -> list:
    value = _plain(value)
    if isinstance(value, dict):
        raise GridConfigError(f"{key}: a hyperparameter takes a value or a list of values, got a mapping {value!r}")
    values = value if isinstance(value, list) else [value]
    if not values:
        raise GridConfigError(f"{key}: empty list of values; allowed: a value or a non-empty list")
    return values


def _metric_info() -> dict:
    from olb.metrics import METRICS

    return METRICS


def _unknown(what: str, name: str, known) -> str:
    return f"unknown {what} {name!r}{did_you_mean(name, known)}; allowed: {', '.join(sorted(known))}"


@dataclass
class _Context:
    """What the expansion of every entry shares: the checked global settings."""

    cfg: DictConfig
    seeds: list[int]
    datasets: list[str]
    specs: dict  # data set name -> olb.data.DatasetSpec
    shorthand: dict
    problems: Problems
    used_shorthand: set = field(default_factory=set)


def plan_grid(cfg: DictConfig) -> Plan:
    """Expand ``cfg`` into cells; every problem decidable from the configs and the data registry (not from
    the files: see :mod:`olb.grid.datacheck`) is collected and raised as one GridConfigError."""
    problems = Problems()
    plan = collect_plan(cfg, problems)
    problems.raise_if_any()
    return plan


def collect_plan(cfg: DictConfig, problems: Problems) -> Plan | None:
    """The plan of ``cfg``, or ``None`` when some problem (added to ``problems``) prevents it."""
    check_keys(cfg, problems)
    import_plugins(cfg.imports, problems)
    seeds = _collect(problems, expand_seeds, cfg.seeds) or [0]
    datasets, specs = _datasets(cfg, problems)
    entries_cfg = _entry_configs(cfg, problems)
    selected = _selected(cfg, entries_cfg, problems)
    _check_settings(cfg, problems)
    shorthand = {name: _plain(cfg[name]) for name in hyperparameter_names() if name in cfg and cfg[name] is not None}
    ctx = _Context(cfg, seeds, datasets, specs, shorthand, problems)
    cells: list[Cell] = []
    entries: dict[str, dict] = {}
    for key in selected:
        cells += _expand_entry(ctx, key, entries_cfg.get(key), entries_cfg, entries)
    warnings = [
        f"{hp}={shorthand[hp]!r} applies to none of the selected algorithms ({', '.join(selected)})"
        for hp in sorted(set(shorthand) - ctx.used_shorthand)
    ]
    if not cells and not problems.items:
        problems.add("the grid is empty: no (algorithm, data set) pair to run")
    table = _table_settings(cfg, cells, problems, warnings) if cells else None
    if problems.items:
        return None
    table_metrics, select_by, lower = table
    return Plan(cells, datasets, entries, table_metrics, select_by, lower, warnings)


def _collect(problems: Problems, fn, *args):
    """``fn(*args)``, or ``None`` with its GridConfigError recorded."""
    try:
        return fn(*args)
    except GridConfigError as err:
        problems.add(str(err))
        return None


def _datasets(cfg: DictConfig, problems: Problems) -> tuple[list[str], dict]:
    from olb.data import DataError, dataset_names, dataset_spec

    datasets = list(_plain(cfg.datasets) or [])
    if not datasets:
        problems.add("datasets: empty; allowed: " + ", ".join(dataset_names()))
    if len(set(datasets)) != len(datasets):
        problems.add(f"datasets={datasets}: repeated data set")
    specs = {}
    for name in dict.fromkeys(datasets):
        if name not in dataset_names():
            problems.add(f"datasets: {_unknown('data set', name, dataset_names())}")
            continue
        try:
            specs[name] = dataset_spec(name)
        except DataError as err:  # a malformed registry entry
            problems.add(f"datasets: {name}: {err}")
    return [name for name in dict.fromkeys(datasets) if name in specs], specs


def _entry_configs(cfg: DictConfig, problems: Problems) -> dict:
    allowed = ", ".join(AlgorithmEntry.__dataclass_fields__)
    entries = {}
    for key in cfg.algorithm:
        raw = cfg.algorithm[key]
        if not isinstance(raw, DictConfig):
            problems.add(f"algorithm.{key}: expected a mapping with keys {allowed}, got {_plain(raw)!r}")
            continue
        try:
            entries[key] = OmegaConf.merge(OmegaConf.structured(AlgorithmEntry), raw)
        except Exception as err:  # noqa: BLE001 - OmegaConf's ValidationError / ConfigKeyError
            bad = [k for k in raw if k not in AlgorithmEntry.__dataclass_fields__]
            hint = did_you_mean(bad[0], AlgorithmEntry.__dataclass_fields__) if bad else ""
            problems.add(f"algorithm.{key}: {str(err).splitlines()[0]}{hint}; allowed keys: {allowed}")
    return entries


def _selected(cfg: DictConfig, entries_cfg: dict, problems: Problems) -> list[str]:
    selected = list(_plain(cfg.algorithms) or [])
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
            problems.add(f"algorithms: {_unknown('algorithm', key if algo == key else algo, known)}")
            continue
        ok.append(key)
    return ok


def _check_settings(cfg: DictConfig, problems: Problems) -> None:
    from olb.protocol import PROTOCOLS

    METRICS = _metric_info()
    if cfg.protocol is not None and cfg.protocol not in PROTOCOLS:
        problems.add(
            f"protocol={cfg.protocol!r} is not allowed{did_you_mean(cfg.protocol, PROTOCOLS)}; "
            f"allowed: {', '.join(PROTOCOLS)}"
        )
    for m in cfg.metrics or ():
        if m not in METRICS:
            problems.add(f"metrics: {_unknown('metric', m, METRICS)}")
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
    if cfg.curve_every < 1:
        problems.add(f"curve_every={cfg.curve_every} is out of range; allowed: an integer >= 1")


def _expand_entry(ctx: _Context, key: str, entry, entries_cfg: dict, entries: dict) -> list[Cell]:
    """The cells of one algorithm entry on every data set; its problems go to ``ctx.problems``."""
    from olb.data import dataset_names
    from olb.protocol import DEFAULT_METRICS, PROTOCOLS, metrics_fix, missing_outputs, split_problem

    cfg, problems = ctx.cfg, ctx.problems
    algo = entry.name if entry is not None and entry.name else key
    cls = get_algorithm(algo)
    label = entry.label if entry is not None and entry.label else key
    best_of = tuple(_plain(entry.best_of) if entry is not None else ())
    allowed_hp = sorted(set(cls.params) | set(SPEC_AXES))
    for hp in best_of:
        if hp not in allowed_hp:
            problems.add(
                f"algorithm.{key}.best_of: {hp!r} is not a hyperparameter of {algo}"
                f"{did_you_mean(hp, allowed_hp)}; allowed: {allowed_hp}"
            )
    protocol = (
        (entry.protocol if entry is not None and entry.protocol else None) or cfg.protocol or cls.default_protocol
    )
    if protocol not in PROTOCOLS:
        problems.add(f"algorithm.{key}.protocol={protocol!r} is not allowed; allowed: {', '.join(PROTOCOLS)}")
        return []
    base = dict(_plain(entry.params) if entry is not None else {})
    per_dataset = dict(_plain(entry.per_dataset) if entry is not None else {})
    only = _plain(entry.datasets) if entry is not None and entry.datasets is not None else None
    for where, names in (("per_dataset", per_dataset), ("datasets", only or ())):
        for ds in names:
            if ds not in dataset_names():
                problems.add(f"algorithm.{key}.{where}: {_unknown('data set', ds, dataset_names())}")
    from olb.grid.selection import check_selection, selection_settings

    try:
        select = selection_settings(_plain(entry.select) if entry is not None else None, f"algorithm.{key}")
    except ValueError as err:
        problems.add(str(err))
        select = None
    entries[key] = {
        "label": label,
        "algorithm": algo,
        "paper_name": entry.paper_name if entry is not None else None,
        "best_of": best_of,
        "select": select,
    }
    metrics = tuple(_plain(cfg.metrics) or DEFAULT_METRICS[cls.task])
    for problem in missing_outputs(cls, metrics):
        problems.add(f"algorithm {key!r}: {problem}; {metrics_fix(cls)}")
    cells: list[Cell] = []
    for ds in ctx.datasets:
        if only is not None and ds not in only:
            continue
        spec = ctx.specs[ds]
        if spec.task != cls.task:
            problems.add(
                f"algorithm {key!r} ({algo}) solves {cls.task} tasks, data set {ds!r} is {spec.task}; "
                f"restrict it with algorithm.{key}.datasets=[...]"
            )
            continue
        no_split = split_problem(protocol, ds, spec.conf_file.name, spec.n_train)
        if no_split:
            problems.add(f"algorithm {key!r}: {no_split}")
            continue
        if select is not None:
            for problem in check_selection(
                select,
                cls,
                tuple(_plain(cfg.metrics) or DEFAULT_METRICS[cls.task]),
                spec.n_train,
                f"algorithm.{key} on {ds}",
            ):
                problems.add(problem)
        grid = dict(base)
        grid.update(per_dataset.get(ds, {}))
        for hp, value in ctx.shorthand.items():
            if hp in cls.params or hp in SPEC_AXES:
                grid[hp] = value
                ctx.used_shorthand.add(hp)
        unknown = [hp for hp in grid if hp not in allowed_hp]
        for hp in unknown:
            problems.add(
                f"algorithm.{key}.params: {algo}: unknown hyperparameter {hp!r}"
                f"{did_you_mean(hp, allowed_hp)}; allowed: {allowed_hp}"
            )
        axes = {}
        for hp, v in grid.items():
            values = _collect(problems, _as_list, f"algorithm.{key}.params.{hp}", v)
            if values is None or hp in unknown:
                break
            axes[hp] = values
        else:
            cells += _expand_configs(ctx, key, cls, label, best_of, protocol, metrics, spec, axes, entries[key])
    return cells


def _expand_configs(
    ctx: _Context,
    key: str,
    cls,
    label: str,
    best_of: tuple,
    protocol: str,
    metrics: tuple,
    spec,
    axes: dict,
    info: dict,
) -> list[Cell]:
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
            ctx.problems.add(f"algorithm.{key}: loops={loops!r} is not allowed; allowed: an integer >= 1")
            continue
        try:
            params = cls.validate(raw)
        except ValueError as err:
            ctx.problems.add(f"algorithm.{key}: {err}")
            continue
        rules = cls.check_params(params, shape)
        if rules:
            ctx.problems.add(
                f"algorithm.{key} on {spec.name} ({spec.shape.n_features} features, "
                f"{spec.shape.n_labels} labels): {'; '.join(rules)}"
            )
            continue
        varying = tuple((hp, loops if hp == "loops" else params[hp]) for hp in varying_keys)
        for seed in ctx.seeds:
            cid = cell_id(cls.name, spec.name, seed, params, protocol, loops, metrics, ctx.cfg.curve_every)
            cells.append(
                Cell(
                    cid,
                    key,
                    label,
                    cls.name,
                    spec.name,
                    seed,
                    params,
                    protocol,
                    loops,
                    metrics,
                    ctx.cfg.curve_every,
                    varying,
                    best_of,
                    info["paper_name"],
                )
            )
    return cells


def _table_settings(cfg: DictConfig, cells: list[Cell], problems: Problems, warnings: list[str]):
    """The table's metrics, the metric ``best_of`` selects by, and which direction is better. When ``metrics``
    names none of ``table.metrics``, it replaces those the cells do not measure (an experiment's table follows
    ``metrics=[...]`` from the command line)."""
    METRICS = _metric_info()
    cell_metrics = sorted(
        {m for c in cells for m in c.measured}, key=lambda m: min(c.measured.index(m) for c in cells if m in c.measured)
    )
    table_metrics = list(_plain(cfg.table.metrics) or [*cell_metrics, "runtime_s"])
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
        for axis in cfg.table[where]:
            if axis not in axes_allowed:
                problems.add(f"table.{where}: {axis!r} is not allowed; allowed: {', '.join(axes_allowed)}")
    if set(cfg.table.rows) & set(cfg.table.columns):
        problems.add(f"table.rows {list(cfg.table.rows)} and table.columns {list(cfg.table.columns)} overlap")
    reported = {
        m: lower for algo in {c.algorithm for c in cells} for m, lower in get_algorithm(algo).report_metrics.items()
    }
    lower = {m: METRICS[m].lower_is_better if m in METRICS else reported.get(m, True) for m in table_metrics}
    return table_metrics, select_by, lower


def describe(plan: Plan) -> str:
    """One line per (entry, data set): number of configurations and seeds."""
    lines = []
    for key, info in plan.entries.items():
        for ds in plan.datasets:
            cs = [c for c in plan.cells if c.entry == key and c.dataset == ds]
            if cs:
                configs = {(tuple(sorted(c.params.items(), key=lambda kv: kv[0])), c.loops) for c in cs}
                lines.append(
                    f"  {info['label']:<22} {ds:<14} {len(configs)} config(s) x {len({c.seed for c in cs})} seed(s)"
                )
    return "\n".join(lines)
