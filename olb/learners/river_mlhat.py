"""river's stream learners at the settings of the MLHAT benchmark's table (Esteban, Cano, Ventura et al., "Hoeffding
adaptive trees for multi-label classification on data streams"; its published figures: conf/reference/mlhat_tables.csv),
as olb learners, so that the grid runs them beside olb's own and sets each figure beside the published one.

Twelve of the table's columns are binary relevance (one river binary classifier per label, copied from one
prototype as river's ``multioutput.PerOutputClassifier`` and the table's own wrapper copy it), the thirteenth
river's iSOUP tree, one multi-target regression tree over the label vector. Registered as ``mlhat_<column>``:

====================  =============================================================================================
``mlhat_ht``          BR + ``tree.HoeffdingTreeClassifier``
``mlhat_efdt``        BR + ``tree.ExtremelyFastDecisionTreeClassifier``
``mlhat_hat``         BR + ``tree.HoeffdingAdaptiveTreeClassifier``
``mlhat_arf``         BR + ``forest.ARFClassifier``
``mlhat_amf``         BR + ``forest.AMFClassifier``
``mlhat_mt``          BR + a single Mondrian tree (``forest.AMFClassifier`` with one tree)
``mlhat_sgt``         BR + ``tree.SGTClassifier``
``mlhat_knn``         BR + ``neighbors.KNNClassifier`` over a sliding window (``neighbors.LazySearch``)
``mlhat_nb``          BR + ``naive_bayes.GaussianNB``
``mlhat_amr``         BR + ``rules.AMRules`` (a regressor of each 0/1 label)
``mlhat_abalr``       BR + ``ensemble.ADWINBaggingClassifier`` of ``linear_model.LogisticRegression``
``mlhat_abolr``       BR + ``ensemble.ADWINBoostingClassifier`` of ``linear_model.LogisticRegression``
``mlhat_isoupt``      ``tree.ISOUPTreeRegressor`` over the 0/1 label vector
====================  =============================================================================================

Each learner's hyperparameters are the settings the table names (``docs/stream_benchmark.md`` lists them), with
the table's values as defaults; everything the table does not name is river's default. The trees' ``delta`` and
``tau`` are ``split_confidence`` and ``tie_threshold`` here, as in ``river_br_ht`` (olb's ``delta`` is AdaGrad's).
The table used river 0.15-0.16; olb runs the installed river (0.26), where a few settings changed name or
disappeared: each learner's docstring says which, and how it is rebuilt.

- **Rows.** The table's ARFF reader gave river every feature of a row, zeros included, also for sparse data
  (and a Hoeffding tree or naive Bayes learns from a zero it is given, unlike from an absent feature): so by
  default (``dense_rows=True``) a row reaches river as the dict {feature index: value} of all its features.
  ``dense_rows=False`` passes only the nonzeros (river's sparse convention, much cheaper on text data; not the
  table's setting).
- **Labels.** A label is relevant when its classifier's most probable value is True (river's ``predict_one``:
  ``max(proba, key=proba.get)``, the table's wrapper); ``scores`` are the probabilities of True. river has no
  classifier of AMRules or of the iSOUP tree: their prediction of the 0/1 label is the score, and the label is
  relevant when it exceeds 0.5 (the table does not say how it turned them into label sets).
- **First example.** Before it a learner abstains (``predict_one`` returns ``None``): the table's wrapper builds
  its classifiers from the first example and predicts an empty dict until then, which river's progressive
  validation does not score (olb/protocol/stream.py).
- **Seeds.** The learners that draw (HAT's bootstrap, ARF, AMF, MT, the ADWIN ensembles) take river's ``seed``
  from the learner's seed, one draw, so a seed fixes the result; every label's copy starts from that seed, as in
  the table's wrapper.

The columns (settings, river model, what river changed) are :mod:`olb.learners.river_mlhat_columns`, their
models and hyperparameters :mod:`olb.learners.river_mlhat_models`; this module adapts and registers them.

river is imported when a learner is built, never when the registry is.
"""

from __future__ import annotations

import copy
from typing import ClassVar

import numpy as np

from olb.learners.base import OnlineLearner, Param
from olb.learners.linear.rows import nonzero_entries
from olb.learners.river_costs import TableColumnCost
from olb.learners.river_mlhat_columns import COLUMNS, Column
from olb.learners.registry import register

DENSE_ROWS = Param(
    bool, True, doc="give river every feature of a row, zeros included (the table's reader); False: the nonzeros"
)


class RiverTableLearner(OnlineLearner):
    """One column of the MLHAT table: river's learner at the table's settings (see the module docstring)."""

    code: ClassVar[str]
    column: ClassVar[Column]
    default_protocol = "prequential"  # the table's
    outputs = ("scores", "labels")
    predict_before_learn = False
    accepts_sparse = True

    def __post_init__(self) -> None:
        super().__post_init__()
        river_seed = int(self.rng.integers(2**31 - 1)) if self.column.seeded else 0
        self.prototype = self.column.build(self.hyper, river_seed)
        if self.column.multi_target:
            self.models = [self.prototype]
        else:  # one copy per label, in label order, before any example (river's PerOutputClassifier copies so)
            self.models = [copy.deepcopy(self.prototype) for _ in range(self.n_labels)]
        self.learned = False  # until the first example: abstain (module docstring)

    def _row(self, x) -> dict:
        if self.hyper["dense_rows"]:  # declared by each column's class, last (DENSE_ROWS)
            values = x.toarray().ravel() if hasattr(x, "toarray") else np.asarray(x).ravel()
            return dict(enumerate(values.tolist()))
        idx, val = nonzero_entries(x, False)
        return dict(zip(idx.tolist(), val.tolist()))

    def predict_one(self, x):
        if not self.learned:
            return None
        row = self._row(x)
        if self.column.multi_target:
            values = self.models[0].predict_one(row)
            scores = np.array([float(values.get(k, 0.0)) for k in range(self.n_labels)], dtype=float)
            return {"scores": scores, "labels": (scores > 0.5).astype(np.int8)}
        if self.column.regressor:
            scores = np.array([float(model.predict_one(row)) for model in self.models], dtype=float)
            return {"scores": scores, "labels": (scores > 0.5).astype(np.int8)}
        probas = [model.predict_proba_one(row) for model in self.models]
        scores = np.array([float(p.get(True, 0.0)) for p in probas], dtype=float)
        labels = np.array([bool(p) and bool(max(p, key=p.get)) for p in probas], dtype=np.int8)
        return {"scores": scores, "labels": labels}

    def learn_one(self, x, feedback) -> None:
        row = self._row(x)
        if self.column.multi_target:
            self.models[0].learn_one(row, {k: float(v) for k, v in enumerate(feedback)})
        else:
            for model, relevant in zip(self.models, feedback):
                model.learn_one(row, float(relevant) if self.column.regressor else bool(relevant))
        self.learned = True


def _learner(code: str, column: Column) -> type[RiverTableLearner]:
    class_name = f"MLHAT{code.upper()}"  # e.g. MLHATHT for mlhat_ht
    changes = f" river 0.26: {column.changes}." if column.changes else ""
    cls = type(
        class_name,
        (RiverTableLearner,),
        {
            "__doc__": f"The MLHAT table's {column.label} column at its settings (module docstring).{changes}",
            "__module__": __name__,
            "__qualname__": class_name,
            "name": f"mlhat_{code}",
            "code": code,
            "column": column,
            **column.params,
            "dense_rows": DENSE_ROWS,
            "test_params": column.test_params,
            "optional_imports": column.modules,
        },
    )
    return register(cls, TableColumnCost(code))


LEARNERS = tuple(_learner(code, column) for code, column in COLUMNS.items())
globals().update({cls.__name__: cls for cls in LEARNERS})  # module attributes: the classes pickle by reference
