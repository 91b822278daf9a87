"""The one evaluation loop of olb: every learner, every paper, the same predict -> feedback -> update cycle.

A protocol is a sequence of phases over the rows of a data set. In each phase the learner sees x,
predicts, and (when the phase updates) receives feedback and learns; phases marked ``scored`` feed the
reported metrics. The protocols the papers use:

``train_test`` (papers 000, 004)
    ``loops`` passes over the official training split (predict, update), then one pass over the test
    split that records the loss and keeps updating. The reported metric is the mean over test examples.
``prequential_last20`` (paper 001)
    The whole data set, shuffled by the seed, is predicted then learned example by example; the metric
    is measured on the final 20% of the stream.
``train_frozen`` (papers 002, 003)
    ``loops`` passes over the training split, then the test split is predicted by the frozen model.

The feedback a learner receives is built by ``FEEDBACK[learner.feedback]`` from its prediction and the
true labels: the full label vector for full-information learners.

Besides the final metrics, a run records a learning curve (the running mean of the primary per-example
metric every ``curve_every`` examples, across all phases), wall and CPU time per phase and the peak
resident memory of the process.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from olb.data.dataset import Dataset
from olb.metrics import METRICS, Metric

PROTOCOLS = ("train_test", "prequential_last20", "train_frozen")

FEEDBACK: dict[str, Callable] = {"full": lambda prediction, y: y}

DEFAULT_METRICS = {"multilabel": ("rank_loss",), "multiclass": ("accuracy",)}


@dataclass(frozen=True)
class Phase:
    name: str
    rows: np.ndarray
    update: bool
    scored: bool


@dataclass
class StreamResult:
    """What one online stream produced: final metrics, curve, timings, memory."""

    metrics: dict[str, float]
    curve: dict[str, np.ndarray]  # "step", "phase" (index into phases), "value"
    phases: dict[str, dict[str, float]]  # name -> wall_s, cpu_s, n_examples
    peak_rss_mb: float
    primary_metric: str
    extra: dict = field(default_factory=dict)

    @property
    def wall_s(self) -> float:
        return sum(p["wall_s"] for p in self.phases.values())

    @property
    def cpu_s(self) -> float:
        return sum(p["cpu_s"] for p in self.phases.values())


def make_phases(dataset: Dataset, protocol: str, loops: int = 1, rng: np.random.Generator | None = None) -> list[Phase]:
    """The phases of ``protocol`` over ``dataset`` (see the module docstring)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; allowed: {', '.join(PROTOCOLS)}")
    if loops < 1:
        raise ValueError(f"loops must be a positive integer, got {loops}")
    if protocol == "prequential_last20":
        order = (rng or np.random.default_rng(0)).permutation(dataset.n_examples)
        cut = int(round(0.8 * len(order)))
        return [Phase("stream", order[:cut], True, False), Phase("last20", order[cut:], True, True)]
    if dataset.n_train is None:
        raise ValueError(f"protocol {protocol!r} needs a train/test split, and dataset {dataset.name!r} has none")
    train = np.arange(dataset.n_train)
    test = np.arange(dataset.n_train, dataset.n_examples)
    phases = [Phase("train" if loops == 1 else f"train_loop{i + 1}", train, True, False) for i in range(loops)]
    return phases + [Phase("test", test, protocol == "train_test", True)]


def run_stream(learner, dataset: Dataset, phases: list[Phase], metrics: tuple[str, ...] | None = None,
               curve_every: int = 50) -> StreamResult:
    """Run ``learner`` through ``phases`` of ``dataset``; metrics are computed over the scored phases."""
    names = tuple(metrics or DEFAULT_METRICS[dataset.task])
    unknown = [m for m in names if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; allowed: {sorted(METRICS)}")
    chosen: list[Metric] = [METRICS[m] for m in names]
    primary = chosen[0]
    feedback = FEEDBACK[learner.feedback]
    X, Y = dataset.X, dataset.Y
    predictions, truths, values, phase_of = [], [], [], []
    timings: dict[str, dict[str, float]] = {}
    for p_index, phase in enumerate(phases):
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for row in phase.rows:
            x, y = X[row], Y[row]
            prediction = learner.predict_one(x)
            values.append(primary.per_example(prediction, y))
            phase_of.append(p_index)
            if phase.scored:
                predictions.append(prediction)
                truths.append(y)
            if phase.update:
                learner.learn_one(x, feedback(prediction, y))
        timings[phase.name] = {"wall_s": time.perf_counter() - wall0, "cpu_s": time.process_time() - cpu0,
                               "n_examples": int(len(phase.rows))}
    P, T = np.asarray(predictions), np.asarray(truths)
    final = {m.name: float(m.compute(P, T)) for m in chosen}
    return StreamResult(final, _curve(np.asarray(values, float), np.asarray(phase_of), curve_every), timings,
                        _peak_rss_mb(), primary.name)


def _curve(values: np.ndarray, phase_of: np.ndarray, every: int) -> dict[str, np.ndarray]:
    """Running mean of the per-example metric within each phase, sampled every ``every`` examples."""
    steps, phases, means = [], [], []
    for p in np.unique(phase_of):
        idx = np.flatnonzero(phase_of == p)
        running = np.cumsum(values[idx]) / np.arange(1, len(idx) + 1)
        keep = np.unique(np.r_[np.arange(every - 1, len(idx), every), len(idx) - 1])
        steps.append(idx[keep] + 1)
        phases.append(np.full(len(keep), p))
        means.append(running[keep])
    return {"step": np.concatenate(steps), "phase": np.concatenate(phases), "value": np.concatenate(means)}


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
