"""One cell: one algorithm with fixed hyperparameters on one data set with one seed, a full online stream.

From Python::

    from olb.run import CellSpec, run_cell
    result = run_cell(CellSpec("adaolmr", "emotions", seed=1, params={"num_learners": 10}))
    result.metrics  # {'rank_loss': ...}

From the command line (``key=value`` pairs; any other key is a hyperparameter of the algorithm)::

    python -m olb.run algorithm=adaolmr dataset=emotions seed=1 num_learners=10
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

import yaml

from olb.cache import CacheFolderError
from olb.data import DataDirs, DataError, Provenance, load_with_provenance
from olb.data.files import data_dir_problems
from olb.paths import conf_dirs
from olb.trust import conf_problems

if TYPE_CHECKING:
    from olb.data.dataset import Dataset
    from olb.learners.base import OnlineLearner
    from olb.protocol import Stopwatch, StreamResult

USAGE = """usage: python -m olb.run algorithm=NAME dataset=NAME [seed=S] [key=value ...]

Runs one cell (one algorithm, fixed hyperparameters, one data set, one seed) and prints its metrics as YAML.
Keys: algorithm, dataset, seed (0), protocol (the algorithm's default), loops (1), metrics (the task's
default), curve_every (50), window (0; W > 0 adds the curve of the metric over the last W examples),
data_dir (one dir, several joined by ':', or a list; default $OLB_DATA_DIR),
verify_checksums (true; false reads edited files of a registered data set); any other key is a
hyperparameter of the algorithm (a name it does not have is refused with the list of those it has).
Metrics and their definitions: docs/metrics.md. Bad arguments: one line on stderr, exit 2."""


def usage() -> str:
    """:data:`USAGE` with the registered algorithms and data sets (and the grid's experiments)."""
    from olb.learners.registry import choices_text

    return (
        f"{USAGE}\n\nAlgorithms:\n{choices_text('algorithms')}\nData sets (docs/data.md to add one):\n"
        f"{choices_text('datasets')}\nGrid experiments (python -m olb.grid +experiment=NAME):\n"
        f"{choices_text('experiments')}"
    )


SPEC_KEYS = (
    "algorithm",
    "dataset",
    "seed",
    "protocol",
    "loops",
    "metrics",
    "curve_every",
    "window",
    "data_dir",
    "verify_checksums",
)


@dataclass(frozen=True)
class CellSpec:
    """Everything that determines a cell's result (``data_dir`` only says where the files are).

    :meth:`validated` checks it once (the grid's planner checks each cell's, :mod:`olb.grid.planning.expand`) and marks it
    ``checked``: :func:`run_cell` and the learner trust a checked spec's hyperparameters, protocol and metrics.
    """

    algorithm: str
    dataset: str
    seed: int = 0
    params: dict = field(default_factory=dict)
    protocol: str | None = None  # None: the algorithm's default protocol
    loops: int = 1
    metrics: tuple[str, ...] | None = None  # None: the task's default metrics
    curve_every: int = 50
    data_dir: DataDirs = None  # one dir, several joined by os.pathsep, or a list
    verify_checksums: bool = True  # false: read edited files of a registered data set as they are
    checked: bool = False  # params resolved and checked, protocol named, metrics checked (:meth:`validated`)
    window: int = 0  # > 0: the curve also holds the primary metric over the last ``window`` examples

    def validated(self) -> CellSpec:
        """This spec checked against the registries: hyperparameters resolved (defaults filled in, each value
        checked), the protocol named, the metrics checked; ValueError naming the first problem."""
        if self.checked:
            return self
        from olb.learners.registry import get_algorithm

        cls = get_algorithm(self.algorithm)
        params, protocol = self.resolved_params(), self.resolved_protocol()
        check_before_loading(self, cls, protocol)
        return replace(self, params=params, protocol=protocol, checked=True)

    def resolved_params(self) -> dict:
        """Hyperparameters with defaults filled in; raises ValueError on unknown names or bad values."""
        from olb.learners.registry import get_algorithm
        from olb.text import did_you_mean

        cls = get_algorithm(self.algorithm)
        for name in self.params:
            if name not in cls.params:
                raise ValueError(
                    f"unknown key {name!r}{did_you_mean(name, [*SPEC_KEYS, *cls.params])}: neither a "
                    f"cell key ({', '.join(SPEC_KEYS)}) nor a hyperparameter of {cls.name} "
                    f"({', '.join(sorted(cls.params))})"
                )
        return cls.validate(dict(self.params))

    def resolved_protocol(self) -> str:
        from olb.protocol import PROTOCOLS
        from olb.learners.registry import get_algorithm
        from olb.text import did_you_mean

        protocol = self.protocol or get_algorithm(self.algorithm).default_protocol
        if protocol not in PROTOCOLS:
            raise ValueError(
                f"unknown protocol {protocol!r}{did_you_mean(protocol, PROTOCOLS)}; allowed: {', '.join(PROTOCOLS)}"
            )
        return protocol


@dataclass
class CellRun:
    """What :func:`run_cell` returns: the spec, its resolved hyperparameters, the stream's result, the timings and
    the data read (the grid's worker turns it into a :class:`olb.grid.messages.CellResult`)."""

    spec: CellSpec
    params: dict
    stream: "StreamResult"
    setup_s: float  # building the learner, compile time and warm-up excluded
    data: Provenance  # the files the cell read and their fingerprint
    setup_compile_s: float = 0.0  # warm-up and compiling before the stream (see compile_s)

    @property
    def compile_s(self) -> float:
        """Seconds spent making code ready, once per process: building or loading the kernels this cell was first
        to call (numba's compiling under its JIT, :class:`olb.protocol.Stopwatch`) and importing the optional
        libraries its learner uses (:func:`warm_up`); left out of ``runtime_s`` and ``cpu_s``."""
        return self.setup_compile_s + self.stream.compile_s

    @property
    def metrics(self) -> dict[str, float]:
        return self.stream.metrics

    @property
    def runtime_s(self) -> float:
        """Wall time from building the learner to the end of the stream (data loading and compiling excluded)."""
        return self.setup_s + self.stream.wall_s


def run_cell(spec: CellSpec) -> CellRun:
    """Load the data, build the learner from the seed, and run the protocol. A spec not ``checked`` yet is
    validated first (:meth:`CellSpec.validated`), its hyperparameters also against the data set's shape."""
    from olb.learners.base import StreamShape
    from olb.learners.registry import get_algorithm

    cls = get_algorithm(spec.algorithm)
    missing = cls.missing_requirements()  # before any data is read: what to install
    if missing:
        raise ValueError(f"algorithm {spec.algorithm!r}: {'; '.join(missing)}")
    valid = spec.validated()
    dataset, source = load_with_provenance(spec.dataset, spec.data_dir, spec.verify_checksums)
    if dataset.task != cls.task:
        raise ValueError(
            f"algorithm {spec.algorithm!r} solves {cls.task} tasks, dataset {spec.dataset!r} is {dataset.task}"
        )
    if not spec.checked:  # a planned cell's were checked against the data set's registered shape
        rules = cls.check_params(valid.params, StreamShape(dataset.n_features, dataset.n_labels, dataset.n_train))
        if rules:
            raise ValueError(f"{cls.name} on {spec.dataset}: {'; '.join(rules)}")
    warm_up_s = warm_up(cls, valid.params)
    protocol = valid.resolved_protocol()
    stream, setup = seeded_stream(
        cls, valid.params, dataset, spec.seed, protocol, spec.loops, spec.metrics, spec.curve_every, spec.window
    )
    return CellRun(valid, valid.params, stream, setup.wall_s, source, warm_up_s + setup.compile_s)


def seeded_stream(
    cls: type[OnlineLearner],
    params: dict,
    dataset: Dataset,
    seed: int | list[int],
    protocol: str,
    loops: int,
    metrics: tuple[str, ...] | None,
    curve_every: int,
    window: int = 0,
) -> tuple[StreamResult, Stopwatch]:
    """The learner ``cls`` with checked ``params`` built from the first child of the seed sequence ``seed``, and
    its stream over ``dataset`` in an order drawn from the second (a cell's, a cross-validation fold's); the
    stream's result and the learner's construction time."""
    import numpy as np

    from olb.protocol import Stopwatch, make_phases, run_stream

    learner_seed, order_seed = np.random.SeedSequence(seed).spawn(2)
    with Stopwatch() as setup:
        learner = cls.from_checked(dataset.n_features, dataset.n_labels, np.random.default_rng(learner_seed), params)
    phases = make_phases(dataset, protocol, loops, np.random.default_rng(order_seed))
    return run_stream(learner, dataset, phases, metrics, curve_every, window), setup


def warm_up(cls, params: dict) -> float:
    """Import the optional libraries the learner ``cls`` with ``params`` uses (its ``optional_imports``, its weak
    learners') and make the process ready for it (``prepare_process``: MOA's JVM), before the cell's clock starts:
    like compiling, a process's first import (river: 0.5-2 s) or JVM start is not the learner's runtime. Returns
    the seconds it took."""
    import importlib
    import time

    from olb.weak.river_adapter import WEAK_LEARNER_IMPORTS

    wanted = (*cls.optional_imports, *WEAK_LEARNER_IMPORTS.get(str(params.get("weak_learner")), ()))
    started = time.perf_counter()
    modules = [module for module in wanted if module not in sys.modules]
    for module in modules:
        importlib.import_module(module)
    prepared = cls.prepare_process()
    return time.perf_counter() - started if modules or prepared else 0.0  # nothing to do: no time to count


def check_before_loading(spec: CellSpec, cls, protocol: str) -> None:
    """The refusals decidable from the registries, with the grid's fixes: metrics unknown or beyond the learner's
    outputs, a protocol that needs a split the data set does not have."""
    from olb.data import dataset_spec
    from olb.metrics import METRICS
    from olb.protocol import metrics_fix, missing_outputs, split_problem, usable_metrics
    from olb.text import did_you_mean

    known = [*METRICS, *cls.report_metrics]
    unknown = [name for name in spec.metrics or () if name not in known]
    if unknown:
        raise ValueError(
            f"metrics: unknown metric {unknown[0]!r}{did_you_mean(unknown[0], known)}; {usable_metrics(cls)}"
        )
    problems = missing_outputs(cls, spec.metrics or ())
    if problems:
        raise ValueError(f"{'; '.join(problems)}; {metrics_fix(cls)}")
    data = dataset_spec(spec.dataset)
    no_split = split_problem(protocol, spec.dataset, data.conf_file.name, data.n_train)
    if no_split:
        raise ValueError(no_split)


def missing_data_dirs(data_dir) -> str | None:
    """What is wrong with the data dirs named (``data_dir``, else ``$OLB_DATA_DIR``) when some do not exist, else
    None: refused even where an embedded copy would do, since the user meant a folder."""
    from olb.data.files import data_dirs

    named, origin = (data_dir, "data_dir") if data_dir else (os.environ.get("OLB_DATA_DIR"), "OLB_DATA_DIR")
    missing = [str(folder) for folder in data_dirs(named) if not folder.is_dir()] if named else []
    return f"{origin}: no such folder: {', '.join(missing)}" if missing else None


class _ValueLoader(yaml.SafeLoader):
    """YAML scalars as YAML 1.2 reads them: ``1e-05`` and ``1e-5`` are numbers (YAML 1.1 wants ``1.0e-05``),
    as in the config files (OmegaConf) and as olb prints them (``cells.csv``, this command's output)."""


_ValueLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789")
)


class UsageError(ValueError):
    """A command-line argument that is not ``key=value`` or lacks a required key."""


def parse_cli(argv: list[str]) -> CellSpec:
    """``key=value`` arguments -> CellSpec; values are read as YAML scalars or lists."""
    fields: dict = {}
    params: dict = {}
    for arg in argv:
        key, sep, raw = arg.partition("=")
        if not sep:
            raise UsageError(f"expected key=value, got {arg!r} (python -m olb.run --help)")
        try:
            value = yaml.load(raw, Loader=_ValueLoader)  # a SafeLoader
        except yaml.YAMLError:
            raise UsageError(f"{key}: cannot read the value {raw!r} (YAML scalar or [list])") from None
        (fields if key in SPEC_KEYS else params)[key] = value
    missing = [k for k in ("algorithm", "dataset") if k not in fields]
    if missing:
        raise UsageError(
            f"missing {', '.join(missing)} (python -m olb.run algorithm=NAME dataset=NAME [seed=S] "
            "[hyperparameter=value ...])"
        )
    if "metrics" in fields and fields["metrics"] is not None:
        metrics = fields["metrics"]
        fields["metrics"] = tuple(metrics) if isinstance(metrics, list) else (metrics,)
    return CellSpec(params=params, **fields)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(arg in ("-h", "--help") for arg in argv):
        print(usage())
        return 0
    try:
        spec = parse_cli(argv)
    except (UsageError, TypeError) as err:  # TypeError: a key given twice, a value of the wrong kind
        return _refuse(err)
    problem = missing_data_dirs(spec.data_dir)
    if problem:
        return _refuse(UsageError(problem))
    refused = conf_problems(conf_dirs()) + data_dir_problems(spec.data_dir)  # what the cell reads its setup from
    if refused:
        for line in refused:
            print(f"olb.run: {line}", file=sys.stderr)
        return 2
    try:
        from olb.kernels import check_folders

        check_folders()  # every folder olb reads code or data from: the user's own, or refused
        result = run_cell(spec)
    except (ValueError, DataError, CacheFolderError) as err:  # unknown names, bad values, unusable data or cache
        return _refuse(err)
    summary = {
        "cell": {k: v for k, v in asdict(spec).items() if v not in (None, {})},
        "params": result.params,
        "metrics": result.metrics,
        "runtime_s": round(result.runtime_s, 3),
        "cpu_s": round(result.stream.cpu_s, 3),
        "compile_s": round(result.compile_s, 3),
        "peak_rss_mb": round(result.stream.peak_rss_mb, 1),
        "phases": result.stream.phases,
        "data_fingerprint": result.data.fingerprint,
    }
    print(yaml.safe_dump(summary, sort_keys=False).rstrip())
    return 0


def _refuse(err: Exception) -> int:
    print(f"olb.run: {str(err).splitlines()[0] if str(err) else type(err).__name__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
