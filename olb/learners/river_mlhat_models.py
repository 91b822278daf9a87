"""river's models of the MLHAT table's columns (:mod:`olb.learners.river_mlhat`), each built at its learner's
hyperparameters, and the hyperparameters the table's settings are (its values as their defaults). Each builder takes
the learner's hyperparameters and river's seed (an int, used by the models that draw).

river is imported when a model is built, never when this module is.
"""

from __future__ import annotations

import functools

from olb.learners.base import Param

DEFAULT_TREE_DELTA = 1e-5  # the table's split confidence of every Hoeffding-bound learner but ARF (river's: 1e-7)


def grace_period(default: int) -> Param:
    return Param(int, default, low=1, doc="examples a leaf sees between split attempts")


def split_confidence(default: float) -> Param:
    return Param(
        float, default, low=0.0, high=1.0, open_low=True, open_high=True, doc="Hoeffding bound's 1 - confidence"
    )


TIE_THRESHOLD = Param(float, 0.05, low=0.0, doc="Hoeffding bound below which a tie is split")
N_MODELS = Param(int, 10, low=1, doc="members of the ensemble")
HOEFFDING: dict[str, Param] = {
    "grace_period": grace_period(200),
    "split_confidence": split_confidence(DEFAULT_TREE_DELTA),
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


def tree_kwargs(hyper: dict) -> dict:
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


def ht(hyper, seed):
    from river import tree

    return tree.HoeffdingTreeClassifier(**tree_kwargs(hyper))


def efdt(hyper, seed):
    from river import tree

    return tree.ExtremelyFastDecisionTreeClassifier(
        **tree_kwargs(hyper), min_samples_reevaluate=hyper["min_samples_reevaluate"]
    )


def hat(hyper, seed):
    from river import drift, tree

    return tree.HoeffdingAdaptiveTreeClassifier(
        **tree_kwargs(hyper),
        drift_detector=drift.ADWIN(),
        drift_window_threshold=hyper["drift_window_threshold"],
        switch_significance=hyper["switch_significance"],
        seed=seed,
    )


def arf(hyper, seed):
    from river import drift, forest

    return forest.ARFClassifier(
        n_models=hyper["n_models"],
        max_features="sqrt",
        lambda_value=hyper["lambda_value"],
        drift_detector=drift.ADWIN(delta=0.001),
        warning_detector=drift.ADWIN(delta=0.01),
        **tree_kwargs(hyper),
        seed=seed,
    )


def amf(hyper, seed):
    from river import forest

    return forest.AMFClassifier(
        n_estimators=hyper.get("n_models", 1), **{name: hyper[name] for name in MONDRIAN}, seed=seed
    )


def sgt(hyper, seed):
    from river import tree

    return tree.SGTClassifier(
        delta=hyper["split_confidence"],
        grace_period=hyper["grace_period"],
        init_pred=hyper["init_pred"],
        lambda_value=hyper["lambda_value"],
        gamma=hyper["gamma"],
    )


def knn(hyper, seed):
    from river import neighbors, utils

    euclidean = functools.partial(utils.math.minkowski_distance, p=2)
    window = neighbors.LazySearch(window_size=hyper["window_size"], dist_func=euclidean)
    return neighbors.KNNClassifier(n_neighbors=hyper["n_neighbors"], engine=window, weighted=True)


def nb(hyper, seed):
    from river import naive_bayes

    return naive_bayes.GaussianNB()


def amr(hyper, seed):
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


def adwin_ensemble(kind: str):
    def build(hyper, seed):
        from river import ensemble, linear_model

        cls = ensemble.ADWINBaggingClassifier if kind == "bagging" else ensemble.ADWINBoostingClassifier
        return cls(linear_model.LogisticRegression(), n_models=hyper["n_models"], seed=seed)

    return build


def isoupt(hyper, seed):
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
