"""How a hyperparameter setting is chosen: k-fold cross-validation on the training split (paper 002, §6.1).

For each candidate setting the learner makes one pass over k-1 folds of the training split (in an order drawn
from the fold's seed) and is scored, frozen, on the held-out fold; the setting's figure for a metric is its mean
over the k folds. Two rules pick the setting from those means:

``majority`` (paper 002: "the setting that is better on more of the metrics")
    Every pair of settings is compared metric by metric; a setting wins the pair when it is better on more
    metrics than the other. The chosen setting has the most wins minus losses (a Copeland count); ties go to
    the better mean rank over the metrics, then to the first setting listed.
``best:<metric>`` (e.g. ``best:f1``)
    The best mean of one metric.

Nothing here knows Ray or MLflow: :func:`cv_scores` is what a worker computes for one setting (all its
folds), :func:`select` turns the fold-by-setting table into a choice and the reason for it.

>>> means = {"a": {"f1": 0.70, "hamming_loss": 0.20, "rank_loss": 0.16},
...          "b": {"f1": 0.72, "hamming_loss": 0.21, "rank_loss": 0.17},
...          "c": {"f1": 0.69, "hamming_loss": 0.19, "rank_loss": 0.15}}
>>> lower = {"f1": False, "hamming_loss": True, "rank_loss": True}
>>> select(means, lower, "majority").chosen, select(means, lower, "best:f1").chosen
('c', 'b')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from olb.data.dataset import Dataset

if TYPE_CHECKING:
    from olb.learners.base import OnlineLearner

RULES = ("majority", "best:<metric>")


SELECTION_KEYS = {"folds": 10, "rule": "majority", "seed": 0, "metrics": None}


@dataclass(frozen=True)
class SelectionSettings:
    """An entry's ``select``: how many folds, the rule, the fold seed, the metrics (None: the entry's)."""

    folds: int
    rule: str
    seed: int
    metrics: tuple[str, ...] | None

    @classmethod
    def of(cls, select: dict[str, Any]) -> SelectionSettings:
        """The settings of a checked ``select`` mapping (:func:`selection_settings`)."""
        metrics = select["metrics"]
        return cls(select["folds"], str(select["rule"]), select["seed"], tuple(metrics) if metrics else None)


def selection_settings(raw: object, where: str) -> dict[str, Any] | None:
    """An entry's ``select`` mapping with defaults filled in (None: the entry is not cross-validated)."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - set(SELECTION_KEYS):
        raise ValueError(f"{where}.select: expected a mapping with keys {', '.join(SELECTION_KEYS)}, got {raw!r}")
    return {**SELECTION_KEYS, **dict(raw)}


def check_selection(
    select: dict[str, Any], cls: type[OnlineLearner], metrics: tuple[str, ...], n_train: int | None, where: str
) -> list[str]:
    """Problems of one entry's ``select`` on one data set (checked by the planner, before any work)."""
    from olb.metrics import METRICS
    from olb.protocol import missing_outputs

    problems = []
    folds, rule = select["folds"], str(select["rule"])
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        problems.append(f"{where}.select.folds={folds!r}; allowed: an integer >= 2")
    elif n_train is not None and folds > n_train:
        problems.append(f"{where}.select.folds={folds} exceeds the {n_train} training rows")
    if n_train is None:
        problems.append(f"{where}.select: cross-validation needs a training split, and the data set has none")
    cv_metrics = tuple(select["metrics"] or metrics)
    unknown = [m for m in cv_metrics if m not in METRICS]
    if unknown:
        problems.append(f"{where}.select.metrics: unknown metric(s) {unknown}")
    problems += [f"{where}.select: {p}" for p in missing_outputs(cls, [m for m in cv_metrics if m in METRICS])]
    if rule != "majority" and not (rule.startswith("best:") and rule.split(":", 1)[1] in cv_metrics):
        problems.append(
            f"{where}.select.rule={rule!r}; allowed: {', '.join(RULES)} with a metric of {list(cv_metrics)}"
        )
    return problems


def fold_datasets(dataset: Dataset, n_folds: int, seed: int = 0) -> list[Dataset]:
    """The ``n_folds`` (train, held-out) splits of ``dataset``'s training rows, each as a Dataset whose first
    rows are the k-1 training folds (``n_train``) and whose last rows are the held-out fold.

    The rows are assigned to folds by a permutation drawn from ``seed``; fold sizes differ by at most one.
    """
    if dataset.n_train is None:
        raise ValueError(f"cross-validation needs a training split, and data set {dataset.name!r} has none")
    if not 2 <= n_folds <= dataset.n_train:
        raise ValueError(
            f"n_folds={n_folds} is out of range; allowed: 2 <= n_folds <= {dataset.n_train} "
            f"(training rows of {dataset.name!r})"
        )
    order = np.random.default_rng(seed).permutation(dataset.n_train)
    folds = np.array_split(order, n_folds)
    out = []
    for f, held_out in enumerate(folds):
        train = np.sort(np.concatenate([folds[g] for g in range(n_folds) if g != f]))
        rows = np.concatenate([train, np.sort(held_out)])
        out.append(
            Dataset(
                f"{dataset.name}[fold {f + 1}/{n_folds}]",
                dataset.X[rows],
                dataset.Y[rows],
                dataset.task,
                dataset.feature_names,
                dataset.label_names,
                len(train),
                dataset.nominal,
            )
        )
    return out


@dataclass(frozen=True)
class CVScores:
    """One setting's cross-validation: each fold's metrics, and the CPU seconds of all the folds' streams."""

    folds: list[dict[str, float]]
    cpu_s: float


def cv_scores(
    algorithm: str,
    params: dict[str, object],
    dataset: Dataset,
    metrics: tuple[str, ...],
    n_folds: int,
    seed: int = 0,
    checked: bool = False,
) -> CVScores:
    """One setting's cross-validation, one entry of ``folds`` per fold; ``checked``: ``params`` are a planned
    cell's, validated then (else they are validated here, once for all folds).

    Fold f's learner is built from the seed sequence (seed, f) and streams its training folds once in an order
    drawn from the same sequence (protocol ``train_frozen``).
    """
    from olb.learners.base import StreamShape
    from olb.learners.registry import get_algorithm
    from olb.run import seeded_stream

    cls = get_algorithm(algorithm)
    if not checked:
        params = cls.validate(dict(params))
        problems = cls.check_params(params, StreamShape(dataset.n_features, dataset.n_labels))
        if problems:
            raise ValueError(f"{cls.name} on {dataset.name}: {'; '.join(problems)}")
    folds = []
    cpu = 0.0
    for f, part in enumerate(fold_datasets(dataset, n_folds, seed)):
        curve_every = max(1, part.n_examples)
        stream, _ = seeded_stream(cls, params, part, [seed, f], "train_frozen", 1, metrics, curve_every)
        folds.append(dict(stream.metrics))
        cpu += stream.cpu_s
    return CVScores(folds, cpu)


@dataclass(frozen=True)
class Selection:
    """The chosen setting, why, and the runner-up under the other rule."""

    chosen: str
    rule: str
    reason: str
    scores: dict  # setting -> the rule's score (Copeland count, or the metric's mean)


def select(means: dict[str, dict[str, float]], lower_is_better: dict[str, bool], rule: str = "majority") -> Selection:
    """Choose among ``means`` (setting -> metric -> mean over folds) by ``rule`` (see the module docstring)."""
    if not means:
        raise ValueError("nothing to select from: no setting has cross-validation results")
    settings = list(means)
    metrics = list(lower_is_better)
    signed = {s: np.array([-means[s][m] if lower_is_better[m] else means[s][m] for m in metrics]) for s in settings}
    if rule.startswith("best:"):
        metric = rule.split(":", 1)[1]
        if metric not in lower_is_better:
            raise ValueError(f"rule {rule!r}: {metric!r} is not a cross-validated metric; allowed: {metrics}")
        j = metrics.index(metric)
        scores = {s: float(means[s][metric]) for s in settings}
        chosen = max(settings, key=lambda s: (signed[s][j], -settings.index(s)))
        return Selection(chosen, rule, f"best mean {metric} over the folds ({scores[chosen]:.4f})", scores)
    if rule != "majority":
        raise ValueError(f"unknown selection rule {rule!r}; allowed: {', '.join(RULES)}")
    table = np.vstack([signed[s] for s in settings])  # higher is better everywhere
    ranks = np.mean([_ranks(-table[:, j]) for j in range(len(metrics))], axis=0)
    copeland = {}
    for i, s in enumerate(settings):
        better = (table[i] > table).sum(axis=1)
        worse = (table[i] < table).sum(axis=1)
        copeland[s] = int((better > worse).sum() - (better < worse).sum())
    chosen = max(settings, key=lambda s: (copeland[s], -ranks[settings.index(s)], -settings.index(s)))
    wins = copeland[chosen]
    return Selection(
        chosen,
        rule,
        f"better on more of the {len(metrics)} metrics than the other settings "
        f"(wins - losses = {wins} of {len(settings) - 1} pairs; mean rank "
        f"{ranks[settings.index(chosen)]:.2f})",
        copeland,
    )


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``values`` (smallest first), ties sharing their mean rank."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for v in np.unique(values):
        tied = values == v
        ranks[tied] = ranks[tied].mean()
    return ranks
