"""Which metrics a stream scores: the task's default, the learner's end-of-stream figures set aside, and the
outputs a metric needs from the learner (the sentences the run and the grid report when one is missing)."""

from __future__ import annotations

from olb.metrics import METRICS, Metric

DEFAULT_METRICS = {"multilabel": ("rank_loss",), "multiclass": ("accuracy",)}


def scored_metrics(learner_cls, names, task: str) -> tuple[str, ...]:
    """The metrics scored example by example for ``names``: the learner's end-of-stream figures
    (``report_metrics``, recorded whatever ``metrics`` says) set aside, the task's default when none is left (the
    learning curve is a scored metric's running mean)."""
    reported = getattr(learner_cls, "report_metrics", {})
    return tuple(name for name in names or () if name not in reported) or DEFAULT_METRICS[task]


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


def chosen_metrics(learner_cls, names, task: str) -> list[Metric]:
    """The registered metrics a stream of ``learner_cls`` scores for ``names`` (:func:`scored_metrics`), the primary
    one first; an unknown name, or one that needs an output the learner does not declare, is an error."""
    names = scored_metrics(learner_cls, names, task)
    unknown = [m for m in names if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; allowed: {sorted(METRICS)}")
    problems = missing_outputs(learner_cls, names)
    if problems:
        raise ValueError("; ".join(problems))
    return [METRICS[m] for m in names]
