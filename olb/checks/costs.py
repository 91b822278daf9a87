"""Checks a learner's cost model (:mod:`olb.learners.costs`) against what the learner uses on a synthetic stream.

``measure_costs(cls)`` runs the learner with its ``test_params`` on a seeded synthetic stream of its task
(``COST_TRAIN`` training and ``COST_TEST`` test rows of emotions' shape, or balance's for a multiclass learner) and
sets what it measures beside what its cost model predicts for that stream's shape:

- **CPU** per example of the stream: the learner's ``default_protocol`` run by the protocol itself
  (:func:`olb.protocol.run_stream`, after a warm-up run that loads its kernels; the time spent loading or compiling
  kernels is not counted), against the model's mean over the same stream
  (:meth:`~olb.learners.costs.CostModel.stream_cost_s`, as the grid plans a cell);
- **memory**: what the model holds once the learner is built and has streamed the rows (the data and its scaled
  copy are made before, as the grid counts them apart), against the model's ``model_memory_mb``, which predicts
  resident memory (what the grid asks Ray for). Measured after the CPU, in a fresh process of its own
  (:func:`measure_costs`), as the larger of two figures: the peak resident memory the process gains (Linux,
  glibc: the freed heap given back first, large arrays mapped apart, so that the gain is the pages the learner
  touches; ``tracemalloc`` would count an array reserved whole but touched in part, the VFDT forest's pool of
  statistics, as whole), and the Python objects alive at the end (``tracemalloc``'s count of Python's own
  allocator: where the CPU's run left Python's memory arenas in part free, a model of small objects, river's
  trees, fills them without the process gaining a page; measured 0.13 to 1.35 MB of resident memory for an
  iSOUP tree of 5.97 MB of objects). A model in a garbage-collected heap of its own
  (:meth:`~olb.learners.base.OnlineLearner.collected_heap_mb`: MOA's JVM) is measured there instead, as the live
  objects it gains, and the prediction is checked not to fall below it by more than ``MEMORY_FACTOR``, with no
  bound above: the JVM's
  resident memory follows its collector (from -0.25 to 11 MB for the same learner on this stream), and what it
  keeps resident beyond the live objects is in its footprint (``process_memory_mb``) or the model's margin.

``check_cost_model(cls)`` raises an ``AssertionError`` naming the learner when a prediction is off by more than
``CPU_FACTOR`` or ``MEMORY_FACTOR`` either way (a memory below ``MEMORY_RESOLUTION_MB`` counts as that much: the
interpreter's own small allocations blur what is below). ``python -m olb.checks`` prints the table of every
registered learner.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import multiprocessing
import os
import traceback
import tracemalloc
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from multiprocessing.connection import Connection

import numpy as np

from olb.checks.contract import _feedback, _make, _metrics, stream_for
from olb.data.dataset import Dataset
from olb.learners.base import OnlineLearner, StreamShape
from olb.learners.costs import CostModel
from olb.protocol import WHOLE_STREAM, Phase, RowReader, learner_phases, make_phases, run_stream

MEASURE_TIMEOUT_S = 600
"""The longest a learner's measurement may take."""

M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter of the size from which an allocation is mapped apart."""

COST_TRAIN, COST_TEST = 300, 100
"""Rows of the synthetic stream the costs are measured on: enough for a model to grow past its first rows, few
enough for a second or two per learner (river's Hoeffding trees: a few seconds)."""

CPU_FACTOR = 12.0
"""How far (either way) a model's CPU per example may be from the measured. The models are fitted on the
benchmarks' data sets; on the synthetic stream the registered learners measured 0.13-5.3x (2026-11-27, a 2-core
Intel Xeon with AVX-512 shared with other jobs): above 2x the learners that learn their training rows in passes
(``learns_passes``), for which the protocol's share (``ROUND_OVERHEAD_S``, 80 us a row) is mostly not spent; below
0.3x river's Hoeffding trees (1.6 us per label and feature planned, 3-6 ms a row measured at ``grace_period=10``,
the slower the more the machine is shared: x12 leaves them room)."""

MEMORY_FACTOR = 4.0
"""How far (either way) a model's memory may be from the measured (after ``MEMORY_RESOLUTION_MB``): measured
0.36-3.35x (2026-11-27, the same machine); above 2x the boosters, whose forest formula is fitted on large
streams with a 1.25x margin, below 0.6x the growing stores (kNN's memory, OML's, an ELM's initial block)."""

MEMORY_RESOLUTION_MB = 0.05
"""Memory below this counts as this much, predicted or measured."""


@dataclass(frozen=True)
class CostMeasurement:
    """A learner's cost model's predictions beside what it measured on the synthetic stream."""

    name: str
    rows: int
    predicted_us: float
    measured_us: float
    predicted_mb: float
    measured_mb: float
    collected: bool = False  # measured as the live objects of a collected heap: the prediction only bounds it

    @property
    def cpu_ratio(self) -> float:
        """Predicted over measured CPU per example."""
        return self.predicted_us / self.measured_us

    @property
    def memory_ratio(self) -> float:
        """Predicted over measured memory, each at least ``MEMORY_RESOLUTION_MB``."""
        return max(self.predicted_mb, MEMORY_RESOLUTION_MB) / max(self.measured_mb, MEMORY_RESOLUTION_MB)

    def problems(self) -> list[str]:
        """What is off by more than its factor, one sentence each (empty: the model holds)."""
        out = []
        if not 1 / CPU_FACTOR <= self.cpu_ratio <= CPU_FACTOR:
            out.append(
                f"CPU per example predicted {self.predicted_us:.1f} us, measured {self.measured_us:.1f} us "
                f"(x{self.cpu_ratio:.2f}, allowed x{1 / CPU_FACTOR:.2f} to x{CPU_FACTOR:g})"
            )
        high = float("inf") if self.collected else MEMORY_FACTOR
        if not 1 / MEMORY_FACTOR <= self.memory_ratio <= high:
            out.append(
                f"memory predicted {self.predicted_mb:.3f} MB, measured {self.measured_mb:.3f} MB "
                f"(x{self.memory_ratio:.2f}, allowed x{1 / MEMORY_FACTOR:.2f} to x{high:g})"
            )
        return out


def cost_stream(cls: type[OnlineLearner]) -> Dataset:
    """The synthetic stream of the learner's task the costs are measured on."""
    return stream_for(cls, COST_TRAIN, COST_TEST)


def stream_shape(cls: type[OnlineLearner], data: Dataset) -> tuple[StreamShape, int]:
    """What the grid tells the cost model of ``data`` run by the learner's default protocol, and its test rows: a
    split's training rows, or every row for a stream learned whole (``prequential_last20``, ``prequential``), and
    the training rows' mean label count for a multi-label stream."""
    whole = cls.default_protocol in WHOLE_STREAM or data.n_train is None
    n_train = data.n_examples if whole else int(data.n_train or 0)
    cardinality = float(np.mean(np.sum(data.Y[:n_train], axis=1))) if data.task == "multilabel" else None
    return StreamShape(data.n_features, data.n_labels, n_train, cardinality), data.n_examples - n_train


def measure_costs(cls: type[OnlineLearner], cost_model: CostModel | None = None) -> CostMeasurement:
    """The learner's ``cost_model`` (default: the registry's for its name) against its CPU and memory on
    :func:`cost_stream` (see the module docstring), measured in a process of its own, forked from a fresh one that
    has only imported olb (multiprocessing's forkserver): what ran before in this process changes nothing (a heap
    that earlier work left in pieces serves a large array from a free block, which its zeroing touches whole, where
    a fresh heap maps it apart untouched), and the allocator's setting stays there. ``cls`` and ``cost_model`` are
    passed by reference: defined at a module's top level. A RuntimeError naming the learner where the measurement
    fails or takes over ``MEASURE_TIMEOUT_S``."""
    if cost_model is None:
        from olb.learners.registry import get_cost_model

        cost_model = get_cost_model(cls.name)
    context = _fresh_processes()
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_measure_in_child, args=(cls, cost_model, send), daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(MEASURE_TIMEOUT_S):
            raise RuntimeError(f"{cls.name}: measuring its costs took more than {MEASURE_TIMEOUT_S} s")
        measured, failure = receive.recv()
    except EOFError:
        raise RuntimeError(f"{cls.name}: the process measuring its costs ended without a result") from None
    finally:
        receive.close()
        child.join(timeout=30)
        if child.is_alive():
            child.kill()
            child.join()
    if failure:
        raise RuntimeError(f"{cls.name}: measuring its costs failed:\n{failure}")
    return measured


@functools.cache
def _fresh_processes() -> multiprocessing.context.ForkServerContext:
    """multiprocessing's forkserver, its server started with olb's learners and checks imported."""
    context = multiprocessing.get_context("forkserver")
    from olb.learners.registry import learner_modules

    context.set_forkserver_preload(["olb.checks.costs", *learner_modules()])
    return context


def _measure_in_child(cls: type[OnlineLearner], cost_model: CostModel, send: Connection) -> None:
    """:func:`_measure`, its result (or the traceback of its failure) sent through ``send``."""
    try:
        send.send((_measure(cls, cost_model), ""))
    except BaseException:
        send.send((None, traceback.format_exc()))
    finally:
        send.close()


def _measure(cls: type[OnlineLearner], cost_model: CostModel) -> CostMeasurement:
    trim = _allocator()  # before any of the learner's work: no large block it frees is handed out again
    data = cost_stream(cls)
    params = cls.validate(dict(cls.test_params))
    shape, n_test = stream_shape(cls, data)
    protocol = cls.default_protocol
    phases = make_phases(data, protocol, rng=np.random.default_rng(0))
    warm_up = stream_for(cls)  # the contract's small stream: the learner's kernels loaded, its imports done
    warm_phases = make_phases(warm_up, protocol)
    run_stream(_make(cls, warm_up), warm_up, warm_phases, _metrics(cls))
    # and the row-by-row path's kernels, which the memory's run calls: the code pages they touch are not the model
    _stream(cls, warm_up, warm_phases, _reader(cls, warm_up, warm_phases))
    cpu_s = run_stream(_make(cls, data), data, phases, _metrics(cls)).cpu_s
    measured_mb, collected = _model_mb(cls, data, phases, trim)
    predicted_s = cost_model.stream_cost_s(params, shape, n_test, frozen=protocol == "train_frozen")
    return CostMeasurement(
        name=cls.name,
        rows=data.n_examples,
        predicted_us=1e6 * predicted_s,
        measured_us=1e6 * cpu_s / data.n_examples,
        predicted_mb=cost_model.model_memory_mb(params, shape),
        measured_mb=measured_mb,
        collected=collected,
    )


def _model_mb(
    cls: type[OnlineLearner], data: Dataset, phases: list[Phase], trim: Callable[[int], int]
) -> tuple[float, bool]:
    """MB the model holds from the learner's construction to the end of ``phases``, the rows read (and scaled as
    the learner asks) before, and whether it was measured in a collected heap of its own: there, the live objects
    it gains; else the larger of the peak resident MB the process gains and, in a second run under
    ``tracemalloc`` (whose own tables would blur the first), the MB of Python objects alive at the end (module
    docstring). The freed heap is given back first (glibc's ``malloc_trim``) and large arrays are always mapped
    apart (:func:`_allocator`), so that what the learner touches is what the process gains, at a page's
    resolution."""
    reader = _reader(cls, data, phases)
    gc.collect()
    trim(0)
    heap_start = cls.collected_heap_mb()
    if heap_start is not None:
        learner = _stream(cls, data, phases, reader)
        heap_end = cls.collected_heap_mb() or 0.0  # the learner alive: its model counted
        del learner
        return max(0.0, heap_end - heap_start), True
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak (VmHWM) starts again at the resident memory now
    start = _status_mb("VmRSS")
    learner = _stream(cls, data, phases, reader)
    resident_mb = _status_mb("VmHWM") - start
    del learner
    gc.collect()
    tracemalloc.start()
    try:
        return max(resident_mb, _python_objects_mb(_stream(cls, data, phases, reader))), False
    finally:
        tracemalloc.stop()


def _reader(cls: type[OnlineLearner], data: Dataset, phases: list[Phase]) -> RowReader:
    """The rows of ``data`` as the learner reads them (scaled as it asks), read before the run."""
    unscored = [p.rows for p in phases if not p.scored]  # none in a prequential stream
    return RowReader(data, _make(cls, data), np.concatenate(unscored) if unscored else np.array([], dtype=np.int64))


def _python_objects_mb(learner: OnlineLearner) -> float:
    """MB that Python's own allocator holds for the objects alive now, ``learner`` among them (``tracemalloc``'s
    domain 0: numpy's arrays, traced in a domain of their own, left out)."""
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.DomainFilter(True, 0)])
    return sum(stat.size for stat in snapshot.statistics("filename")) / 2**20


def _stream(cls: type[OnlineLearner], data: Dataset, phases: list[Phase], reader: RowReader) -> OnlineLearner:
    """A learner built and streamed through ``phases`` as the protocol runs it; the learner."""
    learner = _make(cls, data)
    for phase in learner_phases(learner, phases):
        if phase.block:
            learner.learn_many(reader.block(phase.rows), data.Y[phase.rows].copy())
            continue
        for i in phase.rows:
            x = reader.row(i)
            prediction = learner.predict_one(x) if phase.scored or learner.predict_before_learn else None
            if phase.update:
                learner.learn_one(x, _feedback(learner, prediction, data.Y[i]))
    return learner


@functools.cache
def _allocator() -> Callable[[int], int]:
    """glibc's ``malloc_trim``, once glibc is told to map every allocation of 128 KiB or more apart (``mallopt``:
    its default threshold, which it otherwise raises as such blocks are freed) for the rest of the process: a large
    array reserved as zeros then touches only the pages it uses (the VFDT forest's pool), as in a fresh process,
    and a large block freed goes back to the system instead of being handed out again, zeroed whole (touched).
    A RuntimeError where the measurement cannot be made (not Linux with glibc)."""
    libc = ctypes.CDLL(None)
    if not (hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") and os.access("/proc/self/clear_refs", os.W_OK)):
        raise RuntimeError(
            "olb.checks.costs measures resident memory with glibc's mallopt and malloc_trim and Linux's "
            "/proc/self/clear_refs; this system lacks one of them"
        )
    libc.mallopt(M_MMAP_THRESHOLD, 128 * 1024)
    return libc.malloc_trim


def _status_mb(field: str) -> float:
    """A memory figure of /proc/self/status in MB (``VmRSS``: resident now; ``VmHWM``: its peak)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":")) / 1024


def check_cost_model(cls: type[OnlineLearner], cost_model: CostModel | None = None) -> CostMeasurement:
    """:func:`measure_costs`, raising an AssertionError naming the learner when a prediction is off by more than
    its factor; the measurement otherwise."""
    measured = measure_costs(cls, cost_model)
    problems = measured.problems()
    assert not problems, f"{cls.name}: the cost model misses: " + "; ".join(problems)
    return measured


def cost_table(measurements: Iterable[CostMeasurement]) -> str:
    """Predicted against measured, one learner a line, the ones off by more than their factor marked."""
    lines = [
        f"{'learner':<22} {'rows':>5} {'CPU us/row: predicted':>22} {'measured':>9} {'ratio':>6}  "
        f"{'memory MB: predicted':>20} {'measured':>9} {'ratio':>6}"
    ]
    for m in measurements:
        flag = "  <- off" if m.problems() else ""
        lines.append(
            f"{m.name:<22} {m.rows:>5} {m.predicted_us:>22.1f} {m.measured_us:>9.1f} {m.cpu_ratio:>6.2f}  "
            f"{m.predicted_mb:>20.3f} {m.measured_mb:>9.3f} {m.memory_ratio:>6.2f}{flag}"
        )
    return "\n".join(lines)
