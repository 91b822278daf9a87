"""The evaluation loop: a learner run through the phases of a data set, predicting, scored, learning from its
feedback, with a learning curve, timings and peak memory (:class:`StreamResult`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np

from olb.data.dataset import Dataset
from olb.metrics import Metric, WindowAccumulator
from olb.protocol.feedback_builders import _feedback_builder
from olb.protocol.measuring import Stopwatch, _peak_rss_mb, _reset_peak_rss
from olb.protocol.metric_choice import chosen_metrics
from olb.protocol.phases import Phase, learner_phases
from olb.protocol.rows import RowReader

# A pass reaches ``learn_pass`` in dense blocks of at most this many bytes (CSR rows: the whole phase at once). Larger
# blocks raise glibc's threshold for giving freed memory back to the system: 7.5 MB blocks left kNN's second cell in a
# process 40 MB higher on bibtex, and took more CPU than 1 MB blocks.
PASS_BLOCK_BYTES = 1 << 20


@dataclass
class StreamResult:
    """What one online stream produced: final metrics, curve, timings, memory."""

    metrics: dict[str, float]
    # "step" (examples seen), "phase" (index into phases), running "value" in the phase; "window": the value over
    # the phase's last ``window`` scored examples at each step (only when a window was asked for)
    curve: dict[str, np.ndarray]
    phases: dict[str, dict[str, float]]  # name -> wall_s, cpu_s, compile_s, n_examples
    peak_rss_mb: float
    primary_metric: str
    extra: dict = field(default_factory=dict)
    training: tuple[str, ...] = ()  # the phases that update and are not scored: the training pass(es)

    @property
    def wall_s(self) -> float:
        return sum(p["wall_s"] for p in self.phases.values())

    @property
    def cpu_s(self) -> float:
        return sum(p["cpu_s"] for p in self.phases.values())

    @property
    def compile_s(self) -> float:
        return sum(p.get("compile_s", 0.0) for p in self.phases.values())

    @property
    def train_us_per_example(self) -> float:
        """CPU microseconds per training example: the training phases' CPU over their rows (NaN without any)."""
        rows = sum(self.phases[name]["n_examples"] for name in self.training)
        return 1e6 * sum(self.phases[name]["cpu_s"] for name in self.training) / rows if rows else float("nan")


def run_stream(
    learner,
    dataset: Dataset,
    phases: list[Phase],
    metrics: tuple[str, ...] | None = None,
    curve_every: int = 50,
    window: int = 0,
) -> StreamResult:
    """Run ``learner`` through ``phases`` of ``dataset``; metrics are computed over the scored phases.

    A prediction is what the learner's ``predict_one`` returns: a score vector, a 0/1 label vector or a
    class index, or a dict with several of them keyed by what metrics need (``"scores"``, ``"labels"``); or
    ``None``, not scored (the docstring of :mod:`olb.protocol`). ``window`` > 0 adds the windowed curve
    (``curve["window"]``).
    """
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise ValueError(f"window={window!r} is out of range; allowed: an integer >= 0 (0: no windowed curve)")
    with _blas_controller().limit(limits=1, user_api="blas"):
        return _run_stream(learner, dataset, phases, metrics, curve_every, window)


_BLAS: list = []  # (len(sys.modules), threadpoolctl's controller) when it was made


def _blas_controller():
    """threadpoolctl's controller of the thread pools loaded in this process, made once per process and again
    after any import (a new module may load a BLAS of its own). Making one reads ``/proc/self/maps``: 0.4-1.6 ms
    per stream, more than a small stream's whole pass costs (cars' 1,728 rows: 2 ms), and more with a JVM mapped in."""
    from threadpoolctl import ThreadpoolController

    if not _BLAS or _BLAS[0][0] != len(sys.modules):
        _BLAS[:] = [(len(sys.modules), ThreadpoolController())]
    return _BLAS[0][1]


def _run_stream(learner, dataset: Dataset, phases: list[Phase], metrics, curve_every: int, window: int) -> StreamResult:
    """:func:`run_stream` under its thread limit: the metrics checked, the learner's phases run one after the other."""
    chosen = chosen_metrics(type(learner), metrics, dataset.task)
    final = {m.name: m.accumulator() for m in chosen}
    feedback = _feedback_builder(learner)
    phases = learner_phases(learner, phases)
    rows = RowReader(
        dataset, learner, np.concatenate([p.rows for p in phases if not p.scored] or [np.empty(0)]).astype(np.intp)
    )
    stream = _Stream(learner, dataset, rows, chosen, final, feedback, curve_every, window)
    _reset_peak_rss()
    timings = {phase.name: stream.run_phase(p_index, phase) for p_index, phase in enumerate(phases)}
    return _result(learner, phases, stream, timings)


class _Stream:
    """One stream's state across its phases: the learner and the rows it reads, the chosen metrics (the primary one
    first) and their final accumulators, the learning curve, and the step (the examples seen so far)."""

    def __init__(
        self, learner, dataset: Dataset, rows: RowReader, chosen: list[Metric], final, feedback, curve_every, window
    ):
        self.learner, self.rows, self.Y, self.n_features = learner, rows, dataset.Y, dataset.n_features
        self.chosen, self.primary, self.final, self.feedback = chosen, chosen[0], final, feedback
        self.curve_every, self.window = curve_every, window
        self.always_predict = getattr(learner, "predict_before_learn", True)
        self.passes = getattr(learner, "learns_passes", False) and learner.feedback == "full"
        # whole prequential phases to predict_learn_pass: class predictions scored by per-example metrics, no window
        self.predicting_passes = (
            getattr(learner, "predicts_passes", False)
            and learner.feedback == "full"
            and not window
            and rows.running is None
            and not rows.sparse_rows
            and all(m.per_example and m.needs == "class" for m in chosen)
        )
        self.curve: dict[str, list] = {"step": [], "phase": [], "value": [], **({"window": []} if window else {})}
        self.step = 0

    def run_phase(self, p_index: int, phase: Phase) -> dict[str, float]:
        """Run ``phase`` (the ``p_index``-th), timed by a :class:`Stopwatch`: its timings."""
        running = self.primary.accumulator()
        recent = WindowAccumulator(self.primary, self.window) if self.window else None
        predicts = phase.scored or self.always_predict
        with Stopwatch() as clock:
            if self.predicting_passes and phase.update and predicts and not phase.block:
                self._predict_learn_pass(p_index, phase, running)
            elif phase.block or (self.passes and phase.update and not predicts):
                self._learn_whole(phase)
            else:
                self._one_by_one(p_index, phase, predicts, running, recent)
        return {
            "wall_s": clock.wall_s,
            "cpu_s": clock.cpu_s,
            "compile_s": clock.compile_s,
            "n_examples": int(len(phase.rows)),
        }

    def _block_size(self) -> int:
        """Rows per dense block of a pass: at most ``PASS_BLOCK_BYTES`` of float64 features, at least one row."""
        return max(1, PASS_BLOCK_BYTES // (8 * self.n_features))

    def _predict_learn_pass(self, p_index: int, phase: Phase, running) -> None:
        """A phase given to ``predict_learn_pass`` in dense blocks, its predictions scored as the rows would be one
        by one (:func:`_score_pass`), with the same learning curve."""
        size = self._block_size()
        for start in range(0, len(phase.rows), size):
            part = phase.rows[start : start + size]
            predictions = self.learner.predict_learn_pass(self.rows.block(part), self.Y[part].copy())
            ends = _score_pass(predictions, self.Y[part], self.chosen, running, self.final if phase.scored else None)
            for n in _curve_steps(start, start + len(part), self.curve_every, len(phase.rows)):
                self._curve_point(self.step + n, p_index, self.primary.from_stats(ends[n - start - 1]))
        self.step += len(phase.rows)

    def _learn_whole(self, phase: Phase) -> None:
        """A phase learned without predictions: an initial block at once (``learn_many``), or a training pass given
        to ``learn_pass`` (CSR rows all at once, dense rows in blocks of :meth:`_block_size` rows, in order)."""
        if phase.block:
            self.learner.learn_many(self.rows.block(phase.rows), self.Y[phase.rows].copy())
        else:
            size = len(phase.rows) if self.rows.sparse_rows else self._block_size()
            for start in range(0, len(phase.rows), size):
                part = phase.rows[start : start + size]
                self.learner.learn_pass(self.rows.block(part), self.Y[part].copy())
        self.step += len(phase.rows)

    def _one_by_one(self, p_index: int, phase: Phase, predicts: bool, running, recent) -> None:
        """A phase row by row: predicted (when ``predicts``), scored, then learned from its feedback (when the phase
        updates), with a point of the learning curve every ``curve_every`` rows and at the phase's last."""
        learner, rows, Y, feedback, curve_every = self.learner, self.rows, self.Y, self.feedback, self.curve_every
        for n, row in enumerate(phase.rows, start=1):
            x, y = rows.row(row), Y[row]  # a copy: a view would reach the whole data matrix through .base
            prediction = learner.predict_one(x) if predicts else None
            if prediction is not None:  # None: the learner abstains, nothing is scored (olb.protocol's docstring)
                self._score(prediction, y, running, recent, phase.scored)
            if phase.update:
                learner.learn_one(x, feedback(prediction, y))
            self.step += 1
            if predicts and (n % curve_every == 0 or n == len(phase.rows)):
                self._curve_point(self.step, p_index, running.value(), recent)

    def _score(self, prediction, y, running, recent, scored: bool) -> None:
        """One prediction's statistics added to the phase's ``running`` (and ``recent``, windowed) value of the
        primary metric and, in a ``scored`` phase, to the final value of every chosen metric (statistics that
        several metrics share computed once)."""
        primary = self.primary
        stats = primary.batch_stats(_view(prediction, primary.needs), y)
        running.add(stats)
        if recent is not None:
            recent.add(stats)
        if scored:
            computed = {primary.shares: stats}
            for m in self.chosen:
                if m.shares not in computed:
                    computed[m.shares] = m.batch_stats(_view(prediction, m.needs), y)
                self.final[m.name].add(computed[m.shares])

    def _curve_point(self, step: int, p_index: int, value: float, recent=None) -> None:
        """A point of the learning curve: the step, the phase, the running value (and the windowed one)."""
        self.curve["step"].append(step)
        self.curve["phase"].append(p_index)
        self.curve["value"].append(value)
        if recent is not None:
            self.curve["window"].append(recent.value())


def _result(learner, phases: list[Phase], stream: _Stream, timings: dict[str, dict[str, float]]) -> StreamResult:
    """The :class:`StreamResult` of a finished stream: the final metrics, with the learner's end-of-stream figures
    (``report_metrics``), the curve, the phases' timings and the peak memory."""
    results = {name: float(acc.value()) for name, acc in stream.final.items()}
    if getattr(
        learner, "report_metrics", None
    ):  # figures known only at the end of the stream (OnlineLearner.stream_report)
        report = learner.stream_report(sum(len(p.rows) for p in phases if p.scored))
        results.update({name: float(report[name]) for name in learner.report_metrics})
    return StreamResult(
        results,
        {key: np.asarray(values) for key, values in stream.curve.items()},
        timings,
        _peak_rss_mb(),
        stream.primary.name,
        # the phases that learn without being scored; a prequential stream, all scored, is its own training
        training=tuple(p.name for p in phases if p.update and not p.scored)
        or tuple(p.name for p in phases if p.update),
    )


def _curve_steps(start: int, stop: int, every: int, n_rows: int) -> list[int]:
    """The steps n in (start, stop] of a phase of ``n_rows`` rows that get a point of the learning curve: every
    ``every``-th, and the phase's last.

    >>> _curve_steps(0, 120, 50, 130), _curve_steps(120, 130, 50, 130)
    ([50, 100], [130])
    """
    steps = list(range((start // every + 1) * every, stop + 1, every))
    if stop == n_rows and (not steps or steps[-1] != stop):
        steps.append(stop)
    return steps


def _score_pass(predictions: np.ndarray, y: np.ndarray, chosen: list[Metric], running, final) -> np.ndarray:
    """Score a pass's ``predictions`` (rows) as the stream scores them one by one: each row's statistics added in
    order to the phase's ``running`` accumulator of the primary metric (``chosen[0]``) and, when the phase is
    scored, to ``final``'s; returns the running statistics after each row (the learning curve's)."""
    stats = {}
    for m in chosen:
        if m.shares not in stats:
            values = np.asarray(m.func(predictions, y), dtype=float)
            defined = ~np.isnan(values)
            stats[m.shares] = np.column_stack([np.where(defined, values, 0.0), defined.astype(float)])
        if final is not None:
            _add_rows(final[m.name], stats[m.shares])
    return _add_rows(running, stats[chosen[0].shares])


def _add_rows(accumulator, stats: np.ndarray) -> np.ndarray:
    """Add the rows of ``stats`` to ``accumulator`` one after the other, as its ``add`` would (a cumulative sum
    adds in order): the accumulated statistics after each row."""
    if accumulator.stats is None:
        after = np.cumsum(stats, axis=0)
    else:
        after = np.cumsum(np.vstack([accumulator.stats[None], stats]), axis=0)[1:]
    accumulator.stats = after[-1].copy()
    return after


def _view(prediction, needs: str):
    return prediction[needs] if isinstance(prediction, dict) else prediction
