"""One cell: one algorithm with fixed hyperparameters on one data set with one seed, a full online stream.

From Python::

    from olb.run import CellSpec, run_cell
    result = run_cell(CellSpec("adaolmr", "emotions", seed=1, params={"num_learners": 10}))
    result.metrics  # {'rank_loss': ...}

From the command line (``key=value`` pairs; any other key is a hyperparameter of the algorithm)::

    python -m olb.run algorithm=adaolmr dataset=emotions seed=1 num_learners=10
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import yaml

from olb.data import load_dataset
from olb.protocol import PROTOCOLS, StreamResult, make_phases, run_stream
from olb.registry import get_algorithm

SPEC_KEYS = ("algorithm", "dataset", "seed", "protocol", "loops", "metrics", "curve_every", "data_dir",
             "verify_checksums")


@dataclass(frozen=True)
class CellSpec:
    """Everything that determines a cell's result (``data_dir`` only says where the files are)."""

    algorithm: str
    dataset: str
    seed: int = 0
    params: dict = field(default_factory=dict)
    protocol: str | None = None  # None: the algorithm's default protocol
    loops: int = 1
    metrics: tuple[str, ...] | None = None  # None: the task's default metrics
    curve_every: int = 50
    data_dir: str | list | None = None  # one dir, several joined by os.pathsep, or a list
    verify_checksums: bool = True  # false: read edited files of a registered data set as they are

    def resolved_params(self) -> dict:
        """Hyperparameters with defaults filled in; raises ValueError on unknown names or bad values."""
        return get_algorithm(self.algorithm).validate(dict(self.params))

    def resolved_protocol(self) -> str:
        protocol = self.protocol or get_algorithm(self.algorithm).default_protocol
        if protocol not in PROTOCOLS:
            raise ValueError(f"unknown protocol {protocol!r}; allowed: {', '.join(PROTOCOLS)}")
        return protocol


@dataclass
class CellResult:
    spec: CellSpec
    params: dict
    stream: StreamResult
    setup_s: float

    @property
    def metrics(self) -> dict[str, float]:
        return self.stream.metrics

    @property
    def runtime_s(self) -> float:
        """Wall time from building the learner to the end of the stream (data loading excluded)."""
        return self.setup_s + self.stream.wall_s


def run_cell(spec: CellSpec) -> CellResult:
    """Load the data, build the learner from the seed, and run the protocol."""
    cls = get_algorithm(spec.algorithm)
    params = spec.resolved_params()
    protocol = spec.resolved_protocol()
    dataset = load_dataset(spec.dataset, data_dir=spec.data_dir, verify_checksums=spec.verify_checksums)
    if dataset.task != cls.task:
        raise ValueError(f"algorithm {spec.algorithm!r} solves {cls.task} tasks, dataset {spec.dataset!r} is {dataset.task}")
    learner_seed, order_seed = np.random.SeedSequence(spec.seed).spawn(2)
    start = time.perf_counter()
    learner = cls(dataset.n_features, dataset.n_labels, seed=np.random.default_rng(learner_seed), **params)
    setup_s = time.perf_counter() - start
    phases = make_phases(dataset, protocol, spec.loops, np.random.default_rng(order_seed))
    stream = run_stream(learner, dataset, phases, spec.metrics, spec.curve_every)
    return CellResult(spec, params, stream, setup_s)


def parse_cli(argv: list[str]) -> CellSpec:
    """``key=value`` arguments -> CellSpec; values are read as YAML scalars or lists."""
    fields: dict = {}
    params: dict = {}
    for arg in argv:
        key, sep, raw = arg.partition("=")
        if not sep:
            raise SystemExit(f"olb.run: expected key=value, got {arg!r}")
        value = yaml.safe_load(raw)
        (fields if key in SPEC_KEYS else params)[key] = value
    missing = [k for k in ("algorithm", "dataset") if k not in fields]
    if missing:
        raise SystemExit(f"olb.run: missing {', '.join(missing)} (usage: python -m olb.run algorithm=NAME dataset=NAME [seed=S] [hyperparameter=value ...])")
    if "metrics" in fields and fields["metrics"] is not None:
        fields["metrics"] = tuple(np.atleast_1d(fields["metrics"]).tolist())
    return CellSpec(params=params, **fields)


def main(argv: list[str] | None = None) -> int:
    spec = parse_cli(sys.argv[1:] if argv is None else argv)
    try:
        result = run_cell(spec)
    except ValueError as err:
        print(f"olb.run: {err}", file=sys.stderr)
        return 2
    summary = {"cell": {k: v for k, v in asdict(spec).items() if v not in (None, {})}, "params": result.params,
               "metrics": result.metrics, "runtime_s": round(result.runtime_s, 3),
               "cpu_s": round(result.stream.cpu_s, 3), "peak_rss_mb": round(result.stream.peak_rss_mb, 1),
               "phases": result.stream.phases}
    print(yaml.safe_dump(summary, sort_keys=False).rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
