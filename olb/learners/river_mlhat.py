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

river is imported when a learner is built, never when the registry is.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from olb.learners.base import OnlineLearner, Param
from olb.learners.linear.rows import nonzero_entries
from olb.learners.river_costs import TableColumnCost
from olb.registry import register

DEFAULT_TREE_DELTA = 1e-5  # the table's split confidence of every Hoeffding-bound learner but ARF (river's: 1e-7)


def _grace_period(default: int) -> Param:
    return Param(int, default, low=1, doc="examples a leaf sees between split attempts")


def _split_confidence(default: float) -> Param:
    return Param(
        float, default, low=0.0, high=1.0, open_low=True, open_high=True, doc="Hoeffding bound's 1 - confidence"
    )


TIE_THRESHOLD = Param(float, 0.05, low=0.0, doc="Hoeffding bound below which a tie is split")
N_MODELS = Param(int, 10, low=1, doc="members of the ensemble")
HOEFFDING: dict[str, Param] = {
    "grace_period": _grace_period(200),
    "split_confidence": _split_confidence(DEFAULT_TREE_DELTA),
    "tie_threshold": TIE_THRESHOLD,
}
"""The table's Hoeffding-tree settings (HT, EFDT, HAT; grace period 200, delta 1e-5, tau 0.05)."""

PREDICTION = Param(
    str,
    "model",
    choices=("model", "adaptive", "mean"),
    doc="what a rule or leaf predicts: its LogisticRegression model (the table's), the better of its mean and model "
    "so far (river's default), its mean",
)
"""AMR's and iSOUPT's prediction. The table names none; its AMR and iSOUPT columns are identical on Flags and
Emotions, and are those of the LogisticRegression model (without a split both are binary relevance over it), not of
river's adaptive choice: so the model is the default here."""

MONDRIAN: dict[str, Param] = {
    "step": Param(float, 1.0, low=0.0, open_low=True, doc="step of the Mondrian trees' aggregation weights"),
    "use_aggregation": Param(bool, True, doc="aggregate the predictions of a tree's nodes along the path"),
    "dirichlet": Param(float, 0.5, low=0.0, open_low=True, doc="Dirichlet prior of the nodes' class probabilities"),
    "split_pure": Param(bool, False, doc="split nodes that hold a single class"),
}


@dataclass(frozen=True)
class Column:
    """One column of the table: its river model at the learner's hyperparameters (``build(hyper, seed)``; ``seed``
    is an int), those hyperparameters, the river modules it imports, and whether it is a regressor of the labels."""

    build: Callable[[dict, int], Any]
    params: dict[str, Param]
    modules: tuple[str, ...]
    label: str
    regressor: bool = False
    multi_target: bool = False
    seeded: bool = False
    changes: str = ""  # what river 0.26 changed against the table's river, and how the setting is rebuilt
    test_params: dict = field(default_factory=dict)


def _tree_kwargs(hyper: dict) -> dict:
    from river.tree.splitter import GaussianSplitter

    return {
        "grace_period": hyper["grace_period"],
        "delta": hyper["split_confidence"],
        "tau": hyper["tie_threshold"],
        "split_criterion": "info_gain",
        "leaf_prediction": "nba",
        "nb_threshold": 0,
        "splitter": GaussianSplitter(),
    }


def _ht(hyper, seed):
    from river import tree

    return tree.HoeffdingTreeClassifier(**_tree_kwargs(hyper))


def _efdt(hyper, seed):
    from river import tree

    return tree.ExtremelyFastDecisionTreeClassifier(
        **_tree_kwargs(hyper), min_samples_reevaluate=hyper["min_samples_reevaluate"]
    )


def _hat(hyper, seed):
    from river import drift, tree

    return tree.HoeffdingAdaptiveTreeClassifier(
        **_tree_kwargs(hyper),
        drift_detector=drift.ADWIN(),
        drift_window_threshold=hyper["drift_window_threshold"],
        switch_significance=hyper["switch_significance"],
        seed=seed,
    )


def _arf(hyper, seed):
    from river import drift, forest

    return forest.ARFClassifier(
        n_models=hyper["n_models"],
        max_features="sqrt",
        lambda_value=hyper["lambda_value"],
        drift_detector=drift.ADWIN(delta=0.001),
        warning_detector=drift.ADWIN(delta=0.01),
        **_tree_kwargs(hyper),
        seed=seed,
    )


def _amf(hyper, seed):
    from river import forest

    return forest.AMFClassifier(
        n_estimators=hyper.get("n_models", 1), **{name: hyper[name] for name in MONDRIAN}, seed=seed
    )


def _sgt(hyper, seed):
    from river import tree

    return tree.SGTClassifier(
        delta=hyper["split_confidence"],
        grace_period=hyper["grace_period"],
        init_pred=hyper["init_pred"],
        lambda_value=hyper["lambda_value"],
        gamma=hyper["gamma"],
    )


def _knn(hyper, seed):
    from river import neighbors, utils

    euclidean = functools.partial(utils.math.minkowski_distance, p=2)
    window = neighbors.LazySearch(window_size=hyper["window_size"], dist_func=euclidean)
    return neighbors.KNNClassifier(n_neighbors=hyper["n_neighbors"], engine=window, weighted=True)


def _nb(hyper, seed):
    from river import naive_bayes

    return naive_bayes.GaussianNB()


def _amr(hyper, seed):
    from river import drift, linear_model, rules
    from river.tree.splitter import TEBSTSplitter

    return rules.AMRules(
        n_min=hyper["n_min"],
        delta=hyper["split_confidence"],
        tau=hyper["tie_threshold"],
        pred_type=hyper["prediction"],
        pred_model=linear_model.LogisticRegression(),  # type: ignore[arg-type]  # the table's, a classifier
        splitter=TEBSTSplitter(),
        drift_detector=drift.ADWIN(),
        fading_factor=hyper["fading_factor"],
        anomaly_threshold=hyper["anomaly_threshold"],
        m_min=hyper["m_min"],
    )


def _adwin_ensemble(kind: str):
    def build(hyper, seed):
        from river import ensemble, linear_model

        cls = ensemble.ADWINBaggingClassifier if kind == "bagging" else ensemble.ADWINBoostingClassifier
        return cls(linear_model.LogisticRegression(), n_models=hyper["n_models"], seed=seed)

    return build


def _isoupt(hyper, seed):
    from river import linear_model, tree
    from river.tree.splitter import TEBSTSplitter

    return tree.ISOUPTreeRegressor(
        grace_period=hyper["grace_period"],
        delta=hyper["split_confidence"],
        tau=hyper["tie_threshold"],
        leaf_prediction=hyper["prediction"],
        leaf_model=linear_model.LogisticRegression(),  # type: ignore[arg-type]  # the table's, a classifier
        model_selector_decay=hyper["model_selector_decay"],
        splitter=TEBSTSplitter(),
    )


_TREES = ("river.tree", "river.tree.splitter")
COLUMNS: dict[str, Column] = {
    "ht": Column(_ht, HOEFFDING, _TREES, "HT", test_params={"grace_period": 10}),
    "efdt": Column(
        _efdt,
        {**HOEFFDING, "min_samples_reevaluate": Param(int, 20, low=1, doc="examples between split re-evaluations")},
        _TREES,
        "EFDT",
        test_params={"grace_period": 10, "min_samples_reevaluate": 5},
    ),
    "hat": Column(
        _hat,
        {
            **HOEFFDING,
            "drift_window_threshold": Param(int, 50, low=1, doc="examples an alternate tree sees before a switch"),
            "switch_significance": Param(
                float, 0.05, low=0.0, high=1.0, open_low=True, doc="significance of switching to an alternate tree"
            ),
        },
        (*_TREES, "river.drift"),
        "HAT",
        seeded=True,
        changes="river's default drift_window_threshold is 300 (the table: 50); the ADWIN detector is river's default",
        test_params={"grace_period": 10},
    ),
    "arf": Column(
        _arf,
        {
            "n_models": N_MODELS,
            "grace_period": _grace_period(50),
            "split_confidence": _split_confidence(0.01),
            "tie_threshold": TIE_THRESHOLD,
            "lambda_value": Param(int, 6, low=1, doc="Poisson rate of the online bagging of the trees"),
        },
        ("river.forest", "river.drift", *_TREES),
        "ARF",
        seeded=True,
        changes="every setting is river 0.26's default ARFClassifier (ADWIN(0.001) drift, ADWIN(0.01) warning detector)",
        test_params={"n_models": 3, "grace_period": 10},
    ),
    "amf": Column(
        _amf,
        {"n_models": N_MODELS, **MONDRIAN},
        ("river.forest",),
        "AMF",
        seeded=True,
        changes="the table's n_models is river 0.26's n_estimators",
        test_params={"n_models": 2},
    ),
    "mt": Column(
        _amf,
        {**MONDRIAN, "step": Param(float, 0.1, low=0.0, open_low=True, doc=MONDRIAN["step"].doc)},
        ("river.forest",),
        "MT",
        seeded=True,
        changes=(
            "a single Mondrian tree is river's AMFClassifier with n_estimators=1, as the table describes it; the "
            "table's 'log loss' is no setting in river 0.26 (its Mondrian classifiers always aggregate with the log loss)"
        ),
    ),
    "sgt": Column(
        _sgt,
        {
            "grace_period": _grace_period(200),
            "split_confidence": _split_confidence(DEFAULT_TREE_DELTA),
            "init_pred": Param(float, 0.0, doc="the trees' initial raw prediction"),
            "lambda_value": Param(float, 0.1, low=0.0, doc="L2 penalty of the leaves' weights"),
            "gamma": Param(float, 1.0, low=0.0, doc="penalty on the number of leaves"),
        },
        ("river.tree",),
        "SGT",
        test_params={"grace_period": 10},
    ),
    "knn": Column(
        _knn,
        {
            "n_neighbors": Param(int, 5, low=1, doc="neighbours that vote"),
            "window_size": Param(int, 200, low=1, doc="the most recent examples kept"),
        },
        ("river.neighbors", "river.utils"),
        "KNN",
        changes=(
            "river 0.26's KNNClassifier has no window_size: the window is its engine, an exact LazySearch of the last "
            "window_size examples (min_distance_keep=0) with the Euclidean distance; weighted=True"
        ),
    ),
    "nb": Column(_nb, {}, ("river.naive_bayes",), "NB"),
    "amr": Column(
        _amr,
        {
            "n_min": Param(int, 200, low=1, doc="examples a rule sees between expansion attempts"),
            "prediction": PREDICTION,
            "split_confidence": _split_confidence(DEFAULT_TREE_DELTA),
            "tie_threshold": TIE_THRESHOLD,
            "fading_factor": Param(float, 0.99, low=0.0, high=1.0, doc="fading factor of the rules' error estimates"),
            "anomaly_threshold": Param(float, -0.75, doc="score below which an example is an anomaly for a rule"),
            "m_min": Param(int, 30, low=1, doc="examples a rule sees before it detects anomalies"),
        },
        ("river.rules", "river.linear_model", "river.drift", "river.tree.splitter"),
        "AMR",
        regressor=True,
        changes=(
            "AMRules is a regressor in river: each label is regressed as 0/1 (LogisticRegression as the rules' "
            "prediction model, pred_type=prediction, 'model' by default) and is relevant when the prediction exceeds 0.5"
        ),
        test_params={"n_min": 100},
    ),
    "abalr": Column(
        _adwin_ensemble("bagging"),
        {"n_models": N_MODELS},
        ("river.ensemble", "river.linear_model"),
        "ABALR",
        seeded=True,
        test_params={"n_models": 3},
    ),
    "abolr": Column(
        _adwin_ensemble("boosting"),
        {"n_models": N_MODELS},
        ("river.ensemble", "river.linear_model"),
        "ABOLR",
        seeded=True,
        test_params={"n_models": 3},
    ),
    "isoupt": Column(
        _isoupt,
        {
            "grace_period": _grace_period(200),
            "split_confidence": _split_confidence(DEFAULT_TREE_DELTA),
            "tie_threshold": TIE_THRESHOLD,
            "prediction": PREDICTION,
            "model_selector_decay": Param(
                float, 0.95, low=0.0, high=1.0, doc="decay of the leaves' choice between the mean and the model"
            ),
        },
        ("river.tree", "river.tree.splitter", "river.linear_model"),
        "iSOUPT",
        regressor=True,
        multi_target=True,
        changes=(
            "river 0.26 names it ISOUPTreeRegressor; one tree regresses the 0/1 label vector (LogisticRegression leaf "
            "models, leaf_prediction=prediction, 'model' by default) and a label is relevant when its prediction "
            "exceeds 0.5"
        ),
        test_params={"grace_period": 10},
    ),
}
"""Code -> the table's column (its column name is ``Column.label``)."""

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
