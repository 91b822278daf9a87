"""The one evaluation loop of olb: every learner, every paper, the same predict -> feedback -> update cycle; the
names every user imports from ``olb.protocol``.

Its parts: the protocols' phases (:mod:`olb.protocol.phases`), the rows a learner sees (:mod:`olb.protocol.rows`),
the feedback it receives (:mod:`olb.protocol.feedback_builders`), the metrics a stream scores
(:mod:`olb.protocol.metric_choice`), the loop itself (:mod:`olb.protocol.stream`) and what a stream costs
(:mod:`olb.protocol.measuring`).

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
  with the same additions in the same order (:func:`olb.protocol.stream._score_pass`): the same metrics and curve,
  without the protocol's work per row (not with ``feature_scaling`` over a stream, whose rows are scaled one by one).

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

from olb.protocol.feedback_builders import FEEDBACK, FEEDBACK_SETTINGS
from olb.protocol.measuring import Stopwatch
from olb.protocol.metric_choice import DEFAULT_METRICS, metrics_fix, missing_outputs, scored_metrics, usable_metrics
from olb.protocol.phases import PROTOCOLS, WHOLE_STREAM, Phase, learner_phases, make_phases, split_problem
from olb.protocol.rows import RowReader, RunningMinMax
from olb.protocol.stream import PASS_BLOCK_BYTES, StreamResult, run_stream

__all__ = [
    "DEFAULT_METRICS",
    "FEEDBACK",
    "FEEDBACK_SETTINGS",
    "PASS_BLOCK_BYTES",
    "PROTOCOLS",
    "WHOLE_STREAM",
    "Phase",
    "RowReader",
    "RunningMinMax",
    "Stopwatch",
    "StreamResult",
    "learner_phases",
    "make_phases",
    "metrics_fix",
    "missing_outputs",
    "run_stream",
    "scored_metrics",
    "split_problem",
    "usable_metrics",
]
