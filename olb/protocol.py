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
    ``loops`` passes over the training split, each in its own order drawn from the seed (so that 20 seeds
    are the papers' 20 training-order permutations), then the test split is predicted by the frozen model.
``prequential`` (the MLHAT benchmark; MOA's and river's progressive validation)
    The whole data set as one stream (phase ``stream``) in its order: file order, the training split then the
    test split where the data set is distributed split (a split declared as a seeded permutation streams in
    that permuted order, its training rows first). Every example is predicted, scored, then learned; the
    metrics are accumulated over the whole stream. ``loops`` does not apply, nor does an initial block
    (``init_fraction``: there is no training phase to take it from).
``prequential_shuffled``
    ``prequential`` over the rows in an order drawn from the seed.

What the learner declares (``olb.learners.base.OnlineLearner``) shapes its stream:

- ``init_fraction`` > 0: the first ``round(init_fraction * n)`` rows of the first training phase (n rows)
  are given at once to ``learn_many`` (phase ``init``), before the stream;
- ``predict_before_learn`` False: training rounds that are not scored are learned without a prediction
  (their phase then has no learning curve);
- ``feature_scaling`` ``"minmax"``: every row is scaled with the statistics of the training rows (the rows
  of the phases that are not scored) before the learner sees it: ``(x - min) / (max - min)`` per feature
  (a constant feature becomes 0; test rows may fall outside [0, 1]); on sparse data ``x / max|x|``, so
  that zeros stay zeros. A protocol without training rows (``prequential``) takes the statistics of the rows
  seen so far, the row being scaled included (its features are known before it is predicted; no later row
  is looked at): the first row is all 0, and a row's scale can change as the stream goes on;
- ``accepts_sparse``: on a data set held sparse (CSR) the learner receives rows as ``scipy.sparse.csr_array``
  of shape (1, d); any other learner receives dense rows.
- ``learns_passes`` True: a phase that updates without predicting (nor scoring) is given to ``learn_pass(X, Y)``,
  whole as CSR rows, else in dense blocks of at most ``PASS_BLOCK_BYTES``, in order; it must learn them exactly as
  ``learn_one`` would, one by one, with full feedback (one call per block instead of the protocol's work per row,
  for the linear learners one compiled call; the phase has no curve either way).
- ``predicts_passes`` True: a phase that predicts and updates, with full feedback, scored by per-example metrics of
  a class (``accuracy``) and without a ``window``, is given to ``predict_learn_pass(X, Y)`` in the same dense blocks;
  it must return the predictions ``predict_one`` then ``learn_one`` would give row by row, and they are scored
  with the same additions in the same order (:func:`_score_pass`): the same metrics and curve, without the
  protocol's work per row (not with ``feature_scaling`` over a stream, whose rows are scaled one by one).

The feedback a learner receives is built by ``FEEDBACK[learner.feedback]`` from its prediction and the
true labels: the full label vector for full-information learners; for top-k learners (paper 004) a
:class:`~olb.feedback.TopKFeedback` holding only the k top labels of the ranking the learner
output and their relevance (``k`` is read from the learner, see ``FEEDBACK_SETTINGS``; k must be smaller
than the number of labels). Every learner receives its own copy of the feature row, never a view into the
data set, so nothing but x and the feedback object reaches it.

A stream runs on one CPU: BLAS is limited to one thread while it runs (threadpoolctl). Cells are the unit of
parallelism (one CPU each), and on a busy machine a multi-threaded matrix-vector product is many times slower;
a fixed thread count also keeps the last bits of every result the same on every machine.

A prediction of ``None`` is a learner saying it has nothing to predict yet (river's empty prediction dict, which
river's progressive validation and the MLHAT table leave unscored): no metric and no curve counts that example,
and a full-information learner still learns it.

Besides the final metrics, a run records a learning curve (the running value of the primary metric
within each phase, every ``curve_every`` examples; with ``window`` W > 0 also the metric over the phase's last
W scored examples, at the same steps, so that drift and recovery show), wall and CPU time per phase and the peak
resident memory of the process. Time spent making the compiled kernels ready (loading olb's kernel extension,
or building it where it is missing, :mod:`olb.kernels`; where numba's JIT runs them, under ``OLB_KERNELS=jit`` or
where the extension cannot be built, numba compiling a kernel at its first call in a process) is recorded apart, as ``compile_s``, and left out of ``wall_s`` and ``cpu_s``
(:class:`Stopwatch`): the first cell of a process would otherwise take seconds where the others take
fractions of one.
"""

from __future__ import annotations

import functools
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from olb.data.dataset import Dataset
from olb.feedback import TopKFeedback
from olb.kernels import LOADING as KERNEL_LOADING
from olb.kernels import count_numba_compiling
from olb.kernels import mode as kernel_mode
from olb.learners.params import FEATURE_SCALING
from olb.metrics import METRICS, Metric, WindowAccumulator

PROTOCOLS = ("train_test", "prequential_last20", "train_frozen", "prequential", "prequential_shuffled")
WHOLE_STREAM = ("prequential_last20", "prequential", "prequential_shuffled")  # over every row: no split needed

FEEDBACK: dict[str, Callable] = {
    "full": lambda prediction, y: y,
    "topk": TopKFeedback.from_prediction,  # (prediction, y, k): the top k of sigma(prediction), their relevance
}
# Learner attributes a feedback builder takes as keyword arguments (e.g. the learner's k for "topk").
FEEDBACK_SETTINGS: dict[str, tuple[str, ...]] = {"full": (), "topk": ("k",)}
# A pass reaches ``learn_pass`` in dense blocks of at most this many bytes (CSR rows: the whole phase at once). Larger
# blocks raise glibc's threshold for giving freed memory back to the system: 7.5 MB blocks left kNN's second cell in a
# process 40 MB higher on bibtex, and took more CPU than 1 MB blocks.
PASS_BLOCK_BYTES = 1 << 20

DEFAULT_METRICS = {"multilabel": ("rank_loss",), "multiclass": ("accuracy",)}


def scored_metrics(learner_cls, names, task: str) -> tuple[str, ...]:
    """The metrics scored example by example for ``names``: the learner's end-of-stream figures
    (``report_metrics``, recorded whatever ``metrics`` says) set aside, the task's default when none is left (the
    learning curve is a scored metric's running mean)."""
    reported = getattr(learner_cls, "report_metrics", {})
    return tuple(name for name in names or () if name not in reported) or DEFAULT_METRICS[task]


@dataclass(frozen=True)
class Phase:
    """Rows of the data set in stream order; ``block``: learned at once through ``learn_many``."""

    name: str
    rows: np.ndarray
    update: bool
    scored: bool
    block: bool = False


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


class Stopwatch:
    """Wall and CPU seconds of a block of code without the time spent making kernels ready, measured apart as
    ``compile_s``: building or loading olb's compiled kernels (:mod:`olb.kernels`), and, where numba's JIT runs
    them, the time numba holds its compiler lock (compiling a kernel, or loading it from numba's disk cache).

    ``with Stopwatch() as clock: ...`` then ``clock.wall_s``, ``clock.cpu_s``, ``clock.compile_s``. Kernels are
    made ready once per process (numba: once per kernel and type signature), so only a process's first cells
    compile.
    """

    def __init__(self) -> None:
        self._loading = self._started = (0.0, 0.0)
        self.wall_s = self.cpu_s = self.compile_s = 0.0

    def __enter__(self) -> Stopwatch:
        # numba's compiling is counted once numba is loaded (OLB_KERNELS=jit, or the JIT already running)
        if kernel_mode() == "jit" or "numba" in sys.modules:
            count_numba_compiling()
        self._loading = (KERNEL_LOADING[0], KERNEL_LOADING[1])
        self._started = (time.perf_counter(), time.process_time())
        return self

    def __exit__(self, *exc) -> None:
        wall, cpu = time.perf_counter() - self._started[0], time.process_time() - self._started[1]
        self.compile_s = KERNEL_LOADING[0] - self._loading[0]
        self.wall_s = max(0.0, wall - self.compile_s)
        self.cpu_s = max(0.0, cpu - (KERNEL_LOADING[1] - self._loading[1]))


def make_phases(dataset: Dataset, protocol: str, loops: int = 1, rng: np.random.Generator | None = None) -> list[Phase]:
    """The phases of ``protocol`` over ``dataset`` (see the module docstring)."""
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
    ``None``, not scored (the module docstring). ``window`` > 0 adds the windowed curve (``curve["window"]``).
    """
    from threadpoolctl import threadpool_limits

    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise ValueError(f"window={window!r} is out of range; allowed: an integer >= 0 (0: no windowed curve)")
    with threadpool_limits(limits=1, user_api="blas"):
        return _run_stream(learner, dataset, phases, metrics, curve_every, window)


def _run_stream(learner, dataset: Dataset, phases: list[Phase], metrics, curve_every: int, window: int) -> StreamResult:
    names = scored_metrics(type(learner), metrics, dataset.task)
    unknown = [m for m in names if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; allowed: {sorted(METRICS)}")
    problems = missing_outputs(type(learner), names)
    if problems:
        raise ValueError("; ".join(problems))
    chosen: list[Metric] = [METRICS[m] for m in names]
    primary = chosen[0]
    final = {m.name: m.accumulator() for m in chosen}
    feedback = _feedback_builder(learner)
    phases = learner_phases(learner, phases)
    rows = RowReader(
        dataset, learner, np.concatenate([p.rows for p in phases if not p.scored] or [np.empty(0)]).astype(np.intp)
    )
    Y = dataset.Y
    always_predict = getattr(learner, "predict_before_learn", True)
    passes = getattr(learner, "learns_passes", False) and learner.feedback == "full"
    # whole prequential phases to predict_learn_pass: class predictions scored by per-example metrics, no window
    predicting_passes = (
        getattr(learner, "predicts_passes", False)
        and learner.feedback == "full"
        and not window
        and rows.running is None
        and not rows.sparse_rows
        and all(m.per_example and m.needs == "class" for m in chosen)
    )
    _reset_peak_rss()
    timings: dict[str, dict[str, float]] = {}
    curve: dict[str, list] = {"step": [], "phase": [], "value": [], **({"window": []} if window else {})}
    step = 0
    for p_index, phase in enumerate(phases):
        running = primary.accumulator()
        recent = WindowAccumulator(primary, window) if window else None
        predicts = phase.scored or always_predict
        with Stopwatch() as clock:
            whole = phase.block or (passes and phase.update and not predicts)
            scored_pass = predicting_passes and phase.update and predicts and not phase.block
            if scored_pass:
                size = max(1, PASS_BLOCK_BYTES // (8 * dataset.n_features))
                for start in range(0, len(phase.rows), size):
                    part = phase.rows[start : start + size]
                    predictions = learner.predict_learn_pass(rows.block(part), Y[part].copy())
                    ends = _score_pass(predictions, Y[part], chosen, running, final if phase.scored else None)
                    for n in range(start + 1, start + len(part) + 1):
                        if n % curve_every == 0 or n == len(phase.rows):
                            curve["step"].append(step + n)
                            curve["phase"].append(p_index)
                            curve["value"].append(primary.from_stats(ends[n - start - 1]))
                whole = True
            elif phase.block:
                learner.learn_many(rows.block(phase.rows), Y[phase.rows].copy())
            elif whole:
                size = len(phase.rows) if rows.sparse_rows else max(1, PASS_BLOCK_BYTES // (8 * dataset.n_features))
                for start in range(0, len(phase.rows), size):
                    part = phase.rows[start : start + size]
                    learner.learn_pass(rows.block(part), Y[part].copy())
            step += len(phase.rows) if whole else 0
            for n, row in enumerate(() if whole else phase.rows, start=1):
                x, y = rows.row(row), Y[row]  # a copy: a view would reach the whole data matrix through .base
                prediction = learner.predict_one(x) if predicts else None
                if prediction is not None:  # None: the learner abstains, nothing is scored (module docstring)
                    stats = primary.batch_stats(_view(prediction, primary.needs), y)
                    running.add(stats)
                    if recent is not None:
                        recent.add(stats)
                    if phase.scored:
                        computed = {primary.shares: stats}
                        for m in chosen:
                            if m.shares not in computed:
                                computed[m.shares] = m.batch_stats(_view(prediction, m.needs), y)
                            final[m.name].add(computed[m.shares])
                if phase.update:
                    learner.learn_one(x, feedback(prediction, y))
                step += 1
                if predicts and (n % curve_every == 0 or n == len(phase.rows)):
                    curve["step"].append(step)
                    curve["phase"].append(p_index)
                    curve["value"].append(running.value())
                    if recent is not None:
                        curve["window"].append(recent.value())
        timings[phase.name] = {
            "wall_s": clock.wall_s,
            "cpu_s": clock.cpu_s,
            "compile_s": clock.compile_s,
            "n_examples": int(len(phase.rows)),
        }
    results = {name: float(acc.value()) for name, acc in final.items()}
    if getattr(
        learner, "report_metrics", None
    ):  # figures known only at the end of the stream (OnlineLearner.stream_report)
        report = learner.stream_report(sum(len(p.rows) for p in phases if p.scored))
        results.update({name: float(report[name]) for name in learner.report_metrics})
    return StreamResult(
        results,
        {key: np.asarray(values) for key, values in curve.items()},
        timings,
        _peak_rss_mb(),
        primary.name,
        # the phases that learn without being scored; a prequential stream, all scored, is its own training
        training=tuple(p.name for p in phases if p.update and not p.scored)
        or tuple(p.name for p in phases if p.update),
    )


class RowReader:
    """The rows a learner sees: copies (never views into the data set), dense or CSR as the learner accepts
    (``Dataset.rows`` / ``Dataset.sparse_rows``), scaled as its ``feature_scaling`` asks with the statistics
    of ``train_rows``; without any (a prequential stream), with those of the rows read so far (:class:`RunningMinMax`:
    then ``row`` must be called once per row, in stream order)."""

    def __init__(self, dataset: Dataset, learner, train_rows: np.ndarray):
        scaling = getattr(learner, "feature_scaling", "none")
        if scaling not in (FEATURE_SCALING.choices or ()):
            raise ValueError(f"feature_scaling={scaling!r} is not allowed; allowed: {FEATURE_SCALING.describe()}")
        self.running = None
        if scaling == "minmax" and len(train_rows):
            dataset = replace(dataset, X=_minmax(dataset.X, train_rows, dataset.is_sparse))
        elif scaling == "minmax":
            self.running = RunningMinMax(dataset.n_features, dataset.is_sparse)
        self.dataset = dataset
        self.sparse_rows = dataset.is_sparse and getattr(learner, "accepts_sparse", False)

    def row(self, index):
        x = self.dataset.sparse_rows(index) if self.sparse_rows else self.dataset.rows(index)[0]
        return x if self.running is None else self.running.scale(x)

    def block(self, indices: np.ndarray):
        assert self.running is None, "blocks come from training phases, which give the statistics"
        return self.dataset.sparse_rows(indices) if self.sparse_rows else self.dataset.rows(indices)


class RunningMinMax:
    """``feature_scaling="minmax"`` with the statistics of the rows scaled so far, the current one included: per
    feature ``(x - min) / (max - min)`` (a feature constant so far becomes 0), or on sparse data ``x / max|x|``
    (module docstring). ``scale(x)`` takes a dense row or a CSR row of shape (1, d) and returns a new one."""

    def __init__(self, n_features: int, sparse: bool):
        self.sparse = sparse
        self.low, self.high = np.full(n_features, np.inf), np.full(n_features, -np.inf)
        self.peak = np.zeros(n_features)

    def scale(self, x):
        if hasattr(x, "indices"):  # a CSR row of a sparse data set: its stored entries only
            columns = x.indices
            self.peak[columns] = np.fmax(self.peak[columns], np.abs(x.data))
            data = np.divide(x.data, self.peak[columns], out=np.zeros(len(columns)), where=self.peak[columns] > 0)
            return type(x)((data, columns.copy(), x.indptr.copy()), shape=x.shape)
        if self.sparse:
            self.peak = np.fmax(self.peak, np.abs(x))
            return np.divide(x, self.peak, out=np.zeros_like(x), where=self.peak > 0)
        self.low, self.high = np.fmin(self.low, x), np.fmax(self.high, x)
        span = self.high - self.low
        return (x - self.low) / np.where(span > 0, span, np.inf)


def _minmax(X, train_rows: np.ndarray, sparse: bool):
    """``X`` scaled with the training rows' statistics (see the module docstring)."""
    if sparse:
        import scipy.sparse as sp

        peak = np.asarray(abs(X[train_rows]).max(axis=0).toarray()).ravel()
        inverse = np.divide(1.0, peak, out=np.zeros_like(peak), where=peak > 0)
        return sp.csr_array(X @ sp.diags_array(inverse))
    low = np.nanmin(X[train_rows], axis=0)
    span = np.nanmax(X[train_rows], axis=0) - low
    return (X - low) / np.where(span > 0, span, np.inf)


def missing_outputs(learner_cls, metric_names) -> list[str]:
    """One sentence per metric that needs an output ``learner_cls`` does not declare (``OnlineLearner.outputs``)."""
    outputs = tuple(getattr(learner_cls, "outputs", ("scores",)))
    return [
        f"metric {name!r} needs the learner's {METRICS[name].needs!r} output, and {learner_cls.name} gives "
        f"only {', '.join(map(repr, outputs))}"
        for name in metric_names
        if name in METRICS and METRICS[name].needs not in outputs
    ]


def usable_metrics(learner_cls) -> str:
    """The metrics ``learner_cls`` can produce (those that need an output it declares), as text."""
    outputs = tuple(getattr(learner_cls, "outputs", ("scores",)))
    usable = [name for name, metric in METRICS.items() if metric.needs in outputs]
    usable += getattr(learner_cls, "report_metrics", {})
    return f"{learner_cls.name} can produce {', '.join(usable)} (definitions: docs/metrics.md)"


def metrics_fix(learner_cls) -> str:
    """What to do about :func:`missing_outputs`."""
    return f"choose metrics=[...] that use its output: {usable_metrics(learner_cls)}"


def split_problem(protocol: str, dataset: str, conf_file: str, n_train: int | None) -> str | None:
    """Why ``protocol`` cannot run on a data set without a train/test split (``n_train`` None), and the fix."""
    if protocol in WHOLE_STREAM or n_train is not None:
        return None
    return (
        f"protocol {protocol!r} needs a train/test split, and data set {dataset!r} has none: declare one in "
        f"{conf_file} (split: {{kind: first_rows or seeded_permutation, n_train: ...}}, see docs/data.md) or use a "
        "protocol that needs none, such as protocol=prequential_last20"
    )


def _feedback_builder(learner) -> Callable:
    """``(prediction, y) -> feedback`` for ``learner``, with its settings (``FEEDBACK_SETTINGS``) bound."""
    kind = learner.feedback
    if kind not in FEEDBACK:
        raise ValueError(
            f"learner {type(learner).__name__} asks for unknown feedback {kind!r}; allowed: {', '.join(FEEDBACK)}"
        )
    settings = {name: getattr(learner, name) for name in FEEDBACK_SETTINGS.get(kind, ())}
    return functools.partial(FEEDBACK[kind], **settings) if settings else FEEDBACK[kind]


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


def _reset_peak_rss() -> None:
    """Start this stream's peak-memory window (Linux: reset VmHWM), so that a worker process that runs
    several cells reports each cell's own peak, not the largest of all cells so far."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:  # not Linux (or not permitted): the process-lifetime peak below
        pass


def _peak_rss_mb() -> float:
    """Peak resident memory (MB) since :func:`_reset_peak_rss`: the data, the learner and what it allocated."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024.0
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
