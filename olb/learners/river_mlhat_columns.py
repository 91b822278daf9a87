"""The MLHAT table's columns (:mod:`olb.learners.river_mlhat` registers one learner per column): each column's
river model (:mod:`olb.learners.river_mlhat_models`), its hyperparameters, the river modules it imports, and what
river 0.26 changed against the table's river.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from olb.learners import river_mlhat_models as models
from olb.learners.base import Param


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


_TREES = ("river.tree", "river.tree.splitter")
COLUMNS: dict[str, Column] = {
    "ht": Column(models.ht, models.HOEFFDING, _TREES, "HT", test_params={"grace_period": 10}),
    "efdt": Column(
        models.efdt,
        {
            **models.HOEFFDING,
            "min_samples_reevaluate": Param(int, 20, low=1, doc="examples between split re-evaluations"),
        },
        _TREES,
        "EFDT",
        test_params={"grace_period": 10, "min_samples_reevaluate": 5},
    ),
    "hat": Column(
        models.hat,
        {
            **models.HOEFFDING,
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
        models.arf,
        {
            "n_models": models.N_MODELS,
            "grace_period": models.grace_period(50),
            "split_confidence": models.split_confidence(0.01),
            "tie_threshold": models.TIE_THRESHOLD,
            "lambda_value": Param(int, 6, low=1, doc="Poisson rate of the online bagging of the trees"),
        },
        ("river.forest", "river.drift", *_TREES),
        "ARF",
        seeded=True,
        changes="every setting is river 0.26's default ARFClassifier (ADWIN(0.001) drift, ADWIN(0.01) warning detector)",
        test_params={"n_models": 3, "grace_period": 10},
    ),
    "amf": Column(
        models.amf,
        {"n_models": models.N_MODELS, **models.MONDRIAN},
        ("river.forest",),
        "AMF",
        seeded=True,
        changes="the table's n_models is river 0.26's n_estimators",
        test_params={"n_models": 2},
    ),
    "mt": Column(
        models.amf,
        {**models.MONDRIAN, "step": Param(float, 0.1, low=0.0, open_low=True, doc=models.MONDRIAN["step"].doc)},
        ("river.forest",),
        "MT",
        seeded=True,
        changes=(
            "a single Mondrian tree is river's AMFClassifier with n_estimators=1, as the table describes it; the "
            "table's 'log loss' is no setting in river 0.26 (its Mondrian classifiers always aggregate with the log loss)"
        ),
    ),
    "sgt": Column(
        models.sgt,
        {
            "grace_period": models.grace_period(200),
            "split_confidence": models.split_confidence(models.DEFAULT_TREE_DELTA),
            "init_pred": Param(float, 0.0, doc="the trees' initial raw prediction"),
            "lambda_value": Param(float, 0.1, low=0.0, doc="L2 penalty of the leaves' weights"),
            "gamma": Param(float, 1.0, low=0.0, doc="penalty on the number of leaves"),
        },
        ("river.tree",),
        "SGT",
        test_params={"grace_period": 10},
    ),
    "knn": Column(
        models.knn,
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
    "nb": Column(models.nb, {}, ("river.naive_bayes",), "NB"),
    "amr": Column(
        models.amr,
        {
            "n_min": Param(int, 200, low=1, doc="examples a rule sees between expansion attempts"),
            "prediction": models.PREDICTION,
            "split_confidence": models.split_confidence(models.DEFAULT_TREE_DELTA),
            "tie_threshold": models.TIE_THRESHOLD,
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
        models.adwin_ensemble("bagging"),
        {"n_models": models.N_MODELS},
        ("river.ensemble", "river.linear_model"),
        "ABALR",
        seeded=True,
        test_params={"n_models": 3},
    ),
    "abolr": Column(
        models.adwin_ensemble("boosting"),
        {"n_models": models.N_MODELS},
        ("river.ensemble", "river.linear_model"),
        "ABOLR",
        seeded=True,
        test_params={"n_models": 3},
    ),
    "isoupt": Column(
        models.isoupt,
        {
            "grace_period": models.grace_period(200),
            "split_confidence": models.split_confidence(models.DEFAULT_TREE_DELTA),
            "tie_threshold": models.TIE_THRESHOLD,
            "prediction": models.PREDICTION,
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
