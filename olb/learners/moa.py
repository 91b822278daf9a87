"""MOA's stream learners (Java) as olb learners, on MOA's own classes through JPype (``pip install "olb[moa]"``).

CapyMOA supplies MOA's jar only (it is found without importing CapyMOA, whose import sets up a JVM of its own);
the learners are MOA's classes, built from MOA's command-line strings, fed one ``DenseInstance`` per row through a
header made once per learner. Registered as:

===============  =====================================================================  ==========
``moa_br_ht``    ``multitarget.BasicMultiLabelClassifier -l trees.HoeffdingTree``        multi-label
``moa_isoupt``   ``multilabel.trees.ISOUPTree``                                         multi-label
``moa_amr``      ``rules.multilabel.AMRulesMultiLabelClassifier``                       multi-label
``moa_ht``       ``trees.HoeffdingTree``                                                multiclass
``moa_ozaboost`` ``meta.OzaBoost -l trees.HoeffdingTree``                               multiclass
``moa_ozabag``   ``meta.OzaBag -l trees.HoeffdingTree``                                 multiclass
===============  =====================================================================  ==========

Every hyperparameter defaults to MOA's default; the Hoeffding trees' ``grace_period``, ``split_confidence``,
``tie_threshold`` and ``leaf_prediction`` set MOA's ``-g``, ``-c``, ``-t`` and ``-l`` (docs/moa.md gives the
settings that match olb's VFDT). ``moa_command`` of a learner is the exact MOA string it runs.

- **Rows.** Multiclass: the features as numeric attributes, then the class (nominal, one value per class).
  Multi-label: MOA's convention, the labels first (nominal {0, 1}, the header's output range), then the features.
  Each round is predicted, then learned, on one instance.
- **Outputs.** Multiclass: MOA's most voted class (class 0 before any vote). Multi-label: ``scores`` are each
  label's share of the votes for 1 (the iSOUP tree's regression of the 0/1 label as it is; a vote that is not a
  number counts as none), and a label is relevant when its score exceeds 0.5 (0 before the first example).
- **Seeds.** One draw of the learner's seed is MOA's ``randomSeed`` (set after ``prepareForUse``, then the learner
  reset, so that MOA's random generator starts from it): the same seed repeats exactly.
- **JVM.** One per process (:func:`start_jvm`), started by the learner's warm-up before a cell's clock starts,
  with :data:`JVM_OPTIONS`; ``JAVA_HOME``, when set, names the Java to use (else JPype's search: the
  ``java`` on the system). :func:`missing_requirements` says what the machine lacks, for the grid's refusal.
- **State.** A learner pickles through Java's serialization of its MOA model.

jpype is imported when a learner is built or checked, never when the registry is.
"""

from __future__ import annotations

import functools
import gc
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from olb.learners.base import OnlineLearner, Param, RoundCache
from olb.learners.moa_costs import MOACost
from olb.registry import register

JVM_HEAP_MB = 1024
"""The JVM's maximum heap (``-Xmx``): MOA's models live there (a Hoeffding tree caps itself at 32 MB by default)."""

JVM_YOUNG_MB = 32
"""The heap's young generation (``-Xmn``), where each round's short-lived copies of the row go: fixed, so that the
process's memory is the JVM's footprint plus the models, not however much garbage a collector lets pile up."""

JVM_OPTIONS = (f"-Xmx{JVM_HEAP_MB}m", f"-Xmn{JVM_YOUNG_MB}m", "-XX:+UseSerialGC")
"""The JVM's options. The serial collector: one collector thread, as a worker process runs one cell at a time on one
CPU (a parallel collector's threads would take the other cells' CPUs)."""

INSTALL_JAVA = "Java is not installed (Debian: apt-get install default-jre-headless)"
INSTALL_MOA = 'pip install "olb[moa]"'


def moa_jar() -> Path | None:
    """MOA's jar as CapyMOA ships it (``capymoa/jar/moa.jar``), found without importing CapyMOA; None without it."""
    spec = importlib.util.find_spec("capymoa")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        jar = Path(folder) / "jar" / "moa.jar"
        if jar.is_file():
            return jar
    return None


def jvm_library() -> str | None:
    """The JVM's shared library: under ``$JAVA_HOME`` when it is set (no other is tried then), else JPype's search
    (the system's ``java``, ``/usr/lib/jvm``); None when there is none."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        for candidate in ("lib/server/libjvm.so", "jre/lib/amd64/server/libjvm.so", "lib/server/libjvm.dylib"):
            if (Path(java_home) / candidate).is_file():
                return str(Path(java_home) / candidate)
        return None
    import jpype

    try:
        return jpype.getDefaultJVMPath()
    except jpype.JVMNotFoundException:
        return None


def missing_requirements() -> list[str]:
    """What this machine lacks to run MOA's learners, as one sentence naming what to install; empty when nothing."""
    jpype = sys.modules.get("jpype")
    if jpype is not None and jpype.isJVMStarted():  # asked again by every cell of a process: once is enough
        return []
    if importlib.util.find_spec("jpype") is None or moa_jar() is None:
        return [f"MOA's learners need jpype1 and capymoa (MOA's jar), not installed: {INSTALL_MOA}"]
    library = jvm_library()
    if library is None:
        where = f" under JAVA_HOME={os.environ['JAVA_HOME']}" if os.environ.get("JAVA_HOME") else ""
        return [f"MOA's learners need a Java runtime: {INSTALL_JAVA}; no JVM found{where}"]
    return [f"MOA's code {path} {problem}" for path, problem in _code_problems([Path(library), moa_jar()])]


def _code_problems(files) -> list[tuple[Path, str]]:
    """The files of code the JVM loads (its library, MOA's jar), where they lead, that another user than you or
    root owns or may write to: whoever can change them can change what runs (olb's rule for what it reads)."""
    from olb.cache import owner_problem

    problems = []
    for path in {Path(os.path.realpath(file)) for file in files if file is not None}:
        problem = owner_problem(path, path.stat(), root_ok=True)
        if problem:
            problems.append((path, problem))
    return sorted(problems)


@functools.cache
def start_jvm() -> bool:
    """Start this process's JVM with MOA's jar, once (a JVM cannot restart in a process); whether it started now.
    Refuses, naming what to install, when the machine lacks it."""
    problems = missing_requirements()
    if problems:
        raise RuntimeError(problems[0])
    import jpype
    import jpype.imports  # noqa: F401 - Java packages as Python modules

    if jpype.isJVMStarted():
        return False
    # interrupt=False: Ctrl-C stays Python's (the JVM would otherwise take SIGINT over)
    jpype.startJVM(jvm_library(), *JVM_OPTIONS, classpath=[str(moa_jar())], convertStrings=False, interrupt=False)
    return True


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


def _registered(cls: type[MOALearner]) -> type[MOALearner]:
    """``cls`` registered with its cost model (:class:`olb.learners.moa_costs.MOACost`)."""
    return register(cls, MOACost(cls.name, multi_label=cls.task == "multilabel", heap_mb=JVM_HEAP_MB))


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


class TreeSettings:
    """The settings of MOA's Hoeffding tree, for the learners that are one or are built over one."""

    test_params: ClassVar[dict] = {"grace_period": 20}
    grace_period = GRACE_PERIOD
    split_confidence = SPLIT_CONFIDENCE
    tie_threshold = TIE_THRESHOLD
    leaf_prediction = LEAF_PREDICTION


@_registered
class MOABRHT(TreeSettings, MOAMultiLabel):
    """MOA's binary relevance over its Hoeffding tree (``multitarget.BasicMultiLabelClassifier``)."""

    name = "moa_br_ht"
    moa_class = "multitarget.BasicMultiLabelClassifier"
    over_tree = True


class MOASplitting(MOAMultiLabel):
    """A MOA multi-label learner of its own (no base tree) that grows by a Hoeffding test: grace period, split
    confidence, tie threshold."""

    test_params = {"grace_period": 20}
    grace_period = GRACE_PERIOD
    split_confidence = SPLIT_CONFIDENCE
    tie_threshold = TIE_THRESHOLD


@_registered
class MOAISOUPT(MOASplitting):
    """MOA's iSOUP tree (``multilabel.trees.ISOUPTree``): one multi-target tree over the 0/1 label vector."""

    name = "moa_isoupt"
    moa_class = "multilabel.trees.ISOUPTree"
    regressed = True


@_registered
class MOAAMR(MOASplitting):
    """MOA's AMRules for multi-label streams (``rules.multilabel.AMRulesMultiLabelClassifier``)."""

    name = "moa_amr"
    moa_class = "rules.multilabel.AMRulesMultiLabelClassifier"
    grace_period = Param(int, 200, low=1, doc="examples a rule sees between expansion attempts (MOA's -g)")


@_registered
class MOAHT(TreeSettings, MOAMultiClass):
    """MOA's Hoeffding tree (``trees.HoeffdingTree``)."""

    name = "moa_ht"
    moa_class = "trees.HoeffdingTree"


class MOAEnsemble(TreeSettings, MOAMultiClass):
    """A MOA ensemble of ``ensemble_size`` Hoeffding trees."""

    over_tree = True
    test_params = {"grace_period": 20, "ensemble_size": 3}
    ensemble_size = ENSEMBLE_SIZE


@_registered
class MOAOzaBoost(MOAEnsemble):
    """MOA's online boosting (``meta.OzaBoost``) over its Hoeffding tree."""

    name = "moa_ozaboost"
    moa_class = "meta.OzaBoost"


@_registered
class MOAOzaBag(MOAEnsemble):
    """MOA's online bagging (``meta.OzaBag``) over its Hoeffding tree."""

    name = "moa_ozabag"
    moa_class = "meta.OzaBag"
