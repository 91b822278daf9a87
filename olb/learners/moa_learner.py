"""A MOA classifier (Java) as an olb learner (:mod:`olb.learners.moa` registers them): built from MOA's command-line
string, fed one ``DenseInstance`` per row through a header made once per learner, on the JVM of
:mod:`olb.learners.moa_jvm`.

- **Rows.** Multiclass: the features as numeric attributes, then the class (nominal, one value per class).
  Multi-label: MOA's convention, the labels first (nominal {0, 1}, the header's output range), then the features.
  Each round is predicted, then learned, on one instance.
- **Outputs.** Multiclass: MOA's most voted class (class 0 before any vote). Multi-label: ``scores`` are each
  label's share of the votes for 1 (the iSOUP tree's regression of the 0/1 label as it is; a vote that is not a
  number counts as none), and a label is relevant when its score exceeds 0.5 (0 before the first example).
- **Seeds.** One draw of the learner's seed is MOA's ``randomSeed`` (set after ``prepareForUse``, then the learner
  reset, so that MOA's random generator starts from it): the same seed repeats exactly.
- **State.** A learner pickles through Java's serialization of its MOA model.

jpype is imported when a learner is built, never when this module is.
"""

from __future__ import annotations

import gc
from typing import Any, ClassVar

import numpy as np

from olb.learners.base import OnlineLearner, Param, RoundCache
from olb.learners.moa_jvm import missing_requirements, start_jvm

LEAF_PREDICTIONS = ("MC", "NB", "NBAdaptive")

GRACE_PERIOD = Param(int, 200, low=1, doc="weight a leaf learns between split attempts (MOA's -g)")
SPLIT_CONFIDENCE = Param(
    float, 1e-7, low=0.0, high=1.0, open_low=True, doc="the Hoeffding bound's delta: 1 - confidence (MOA's -c)"
)
TIE_THRESHOLD = Param(float, 0.05, low=0.0, doc="Hoeffding bound below which a tie is split (MOA's -t)")
LEAF_PREDICTION = Param(
    str,
    "NBAdaptive",
    choices=LEAF_PREDICTIONS,
    doc="a leaf's prediction: majority class, naive Bayes or the better of the two so far (MOA's -l)",
)
ENSEMBLE_SIZE = Param(int, 10, low=1, doc="trees of the ensemble (MOA's -s)")

TREE_PARAMS = {
    "grace_period": GRACE_PERIOD,
    "split_confidence": SPLIT_CONFIDENCE,
    "tie_threshold": TIE_THRESHOLD,
    "leaf_prediction": LEAF_PREDICTION,
}
FLAGS = {
    "grace_period": "g",
    "split_confidence": "c",
    "tie_threshold": "t",
    "leaf_prediction": "l",
    "ensemble_size": "s",
}
"""Hyperparameter -> MOA's option letter."""


def moa_options(hyper: dict, names) -> str:
    """MOA's options ``-g 200 -c 1e-07 ...`` of the hyperparameters ``names``."""
    return " ".join(f"-{FLAGS[name]} {hyper[name]!r}".replace("'", "") for name in names)


class MOALearner(OnlineLearner):
    """A MOA classifier, built from its command string (:meth:`command`), fed one instance per row (module
    docstring)."""

    moa_class: ClassVar[str]  # MOA's class, as its command line names it
    over_tree: ClassVar[bool] = False  # the class takes MOA's Hoeffding tree as its base learner (-l)
    default_protocol = "prequential"
    predict_before_learn = False

    def __post_init__(self) -> None:
        self.moa_seed = int(self.rng.integers(2**31 - 1))
        self.moa_command = self.command(self.hyper)
        start_jvm()
        self._header = self._make_header()
        self._model = self._build()
        self._instance: RoundCache[Any] = RoundCache()

    @classmethod
    def command(cls, hyper: dict) -> str:
        """MOA's command-line string of the classifier at ``hyper``: its own options, and the tree's as its base
        learner's when it has one."""
        if not cls.over_tree:
            return f"{cls.moa_class} {moa_options(hyper, cls.params)}"
        tree = f"trees.HoeffdingTree {moa_options(hyper, TREE_PARAMS)}"
        own = moa_options(hyper, [name for name in cls.params if name not in TREE_PARAMS])
        return f"{cls.moa_class} -l ({tree}) {own}".rstrip()

    @classmethod
    def missing_requirements(cls) -> list[str]:
        return missing_requirements()

    @classmethod
    def prepare_process(cls) -> bool:
        return start_jvm()

    @classmethod
    def collected_heap_mb(cls) -> float:
        """The JVM's heap in use after two full collections (the first may leave what the second takes: objects
        that Python's proxies released only now), in MB; Python's collector run first, so that no proxy of a
        dropped model holds it."""
        from java.lang import Runtime, System

        gc.collect()
        System.gc()
        System.gc()
        runtime = Runtime.getRuntime()
        return (runtime.totalMemory() - runtime.freeMemory()) / 2**20

    def _build(self):
        from moa.classifiers import Classifier
        from moa.options import ClassOption

        model = ClassOption.cliStringToObject(self.moa_command, Classifier, None)
        model.prepareForUse()  # before the seed: AMRules' generator exists only then
        model.setRandomSeed(self.moa_seed)
        model.resetLearning()  # MOA's generator anew, from the seed
        model.setModelContext(self._header)
        return model

    def _make_header(self):
        raise NotImplementedError

    def _values(self, x) -> np.ndarray:
        raise NotImplementedError

    def _instance_of(self, x):
        """x as an instance of the header (a copy: nothing refers to the caller's array)."""
        import jpype
        from com.yahoo.labs.samoa.instances import DenseInstance

        instance = DenseInstance(1.0, jpype.JArray(jpype.JDouble)(self._values(x)))
        instance.setDataset(self._header)
        return instance

    def __getstate__(self) -> dict:
        from java.io import ByteArrayOutputStream
        from weka.core import SerializationHelper

        state = {key: value for key, value in self.__dict__.items() if key not in ("_header", "_model", "_instance")}
        buffer = ByteArrayOutputStream()
        SerializationHelper.write(buffer, self._model)
        state["_model_bytes"] = bytes(buffer.toByteArray())
        return state

    def __setstate__(self, state: dict) -> None:
        start_jvm()
        import jpype
        from java.io import ByteArrayInputStream
        from weka.core import SerializationHelper  # Java code reads it: Java's deserialization finds MOA's classes

        model_bytes = state.pop("_model_bytes")
        self.__dict__.update(state)
        self._header = self._make_header()
        self._model = SerializationHelper.read(ByteArrayInputStream(jpype.JArray(jpype.JByte)(model_bytes)))
        self._instance = RoundCache()


def _attributes(names: list[str], nominal: dict[str, list[str]]):
    """A Java list of MOA attributes: numeric, or nominal with the given values."""
    from com.yahoo.labs.samoa.instances import Attribute
    from java.util import ArrayList

    attributes = ArrayList()
    for name in names:
        if name in nominal:
            values = ArrayList()
            for value in nominal[name]:
                values.add(value)
            attributes.add(Attribute(name, values))
        else:
            attributes.add(Attribute(name))
    return attributes


class MOAMultiClass(MOALearner):
    """A MOA classifier of one class per row: features, then the class attribute."""

    task = "multiclass"
    outputs = ("class",)
    default_protocol = "prequential_last20"

    def _make_header(self):
        from com.yahoo.labs.samoa.instances import Instances, InstancesHeader

        names = [f"x{i}" for i in range(self.n_features)] + ["class"]
        instances = Instances("olb", _attributes(names, {"class": [str(c) for c in range(self.n_labels)]}), 0)
        instances.setClassIndex(self.n_features)
        return InstancesHeader(instances)

    def _values(self, x) -> np.ndarray:
        return np.append(np.asarray(x, dtype=float), 0.0)  # the class, set when learned

    def predict_one(self, x) -> int:
        votes = np.asarray(self._model.getVotesForInstance(self._instance.get(x, self._instance_of)), dtype=float)
        return int(votes.argmax()) if votes.size and votes.max() > 0 else 0

    def learn_one(self, x, feedback) -> None:
        instance = self._instance.get(x, self._instance_of)
        self._instance.clear()
        instance.setClassValue(float(int(feedback)))
        self._model.trainOnInstance(instance)


class MOAMultiLabel(MOALearner):
    """A MOA multi-label learner: the labels (nominal {0, 1}, the output range) first, then the features."""

    outputs = ("scores", "labels")
    regressed: ClassVar[bool] = False  # the vote for 1 is a regression of the 0/1 label, not a share of votes

    def _make_header(self):
        from com.yahoo.labs.samoa.instances import Instances, InstancesHeader, Range

        labels = [f"y{j}" for j in range(self.n_labels)]
        names = labels + [f"x{i}" for i in range(self.n_features)]
        instances = Instances("olb", _attributes(names, dict.fromkeys(labels, ["0", "1"])), 0)
        instances.setRangeOutputIndices(Range(f"1-{self.n_labels}"))
        return InstancesHeader(instances)

    def _values(self, x) -> np.ndarray:
        return np.concatenate([np.zeros(self.n_labels), np.asarray(x, dtype=float)])  # labels set when learned

    def _scores(self, prediction) -> np.ndarray:
        """Each label's share of the votes for 1 (MOA drops a vote array's zero tail: [1.0] is all for 0), or the
        vote for 1 as it is where it is a regression of the 0/1 label (``regressed``)."""
        scores = np.zeros(self.n_labels)
        for j in range(self.n_labels if prediction is not None else 0):
            if not prediction.hasVotesForAttribute(j):
                continue
            votes = np.zeros(2)
            given = np.nan_to_num(np.asarray(prediction.getVotes(j), dtype=float)[:2], nan=0.0)  # NaN: no vote
            votes[: given.size] = given
            total = votes.sum()
            scores[j] = votes[1] if self.regressed else votes[1] / total if total > 0 else 0.0
        return scores

    def predict_one(self, x) -> dict | None:
        prediction = self._model.getPredictionForInstance(self._instance.get(x, self._instance_of))
        scores = self._scores(prediction)
        return {"scores": scores, "labels": (scores > 0.5).astype(np.int8)}

    def learn_one(self, x, feedback) -> None:
        instance = self._instance.get(x, self._instance_of)
        self._instance.clear()
        for j, relevant in enumerate(np.asarray(feedback)):
            instance.setValue(j, float(relevant))
        self._model.trainOnInstance(instance)
