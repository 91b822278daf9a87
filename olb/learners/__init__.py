"""olb's learners by class name: ``from olb.learners import FALT, AdaOLMR, OML``.

Each class is imported on first use (a family's module, with its numpy/scipy/numba), so importing this package
stays light: it never imports Ray, MLflow, Hydra, pandas or matplotlib. The registry (:mod:`olb.registry`) maps
the algorithm names the grid and the command line use (``"falt"``) to these classes; :mod:`olb.checks` checks a
learner, built-in or your own, against the contract of :class:`OnlineLearner`.
"""

from __future__ import annotations

import importlib

from olb.learners.base import OnlineLearner, Param, StreamShape

_MODULES = {
    "olb.learners.boosting.mlr": ("AdaOLMR", "OnlineBMR"),
    "olb.learners.boosting.multiclass": ("AdaBoostOLM", "OnlineMBBM"),
    "olb.learners.boosting.topk": ("TopAda", "TopOpt"),
    "olb.learners.boosting.baselines": ("BestVFDT", "OzaBoost"),
    "olb.learners.elm": ("ELMOMLLStar", "OSMLELM"),
    "olb.learners.linear.alt": ("FALT", "SALT"),
    "olb.learners.linear.alt_kernel": ("FALTKernel",),
    "olb.learners.linear.olansgd": ("OLANSGDStar",),
    "olb.learners.linear.pa": ("PA1BR", "PA1BRKernel", "PA2BR", "PA2BRKernel"),
    "olb.learners.moa": ("MOAAMR", "MOABRHT", "MOAHT", "MOAISOUPT", "MOAOzaBag", "MOAOzaBoost"),
    "olb.learners.neighbors.knn": ("KNN",),
    "olb.learners.neighbors.oml": ("OML",),
    "olb.learners.river_family": (
        "RiverBRHT",
        "RiverBRLR",
        "RiverBRPA",
        "RiverCCHT",
        "RiverCCLR",
        "RiverCCPA",
        "RiverMCCLR",
    ),
    "olb.learners.river_mlhat": (
        "MLHATABALR",
        "MLHATABOLR",
        "MLHATAMF",
        "MLHATAMR",
        "MLHATARF",
        "MLHATEFDT",
        "MLHATHAT",
        "MLHATHT",
        "MLHATISOUPT",
        "MLHATKNN",
        "MLHATMT",
        "MLHATNB",
        "MLHATSGT",
    ),
    "olb.learners.stream_br.hoeffding": ("BRHT",),
    "olb.learners.stream_br.knn": ("BRKNN",),
    "olb.learners.thresholds": ("AdaOLMRThresholded", "OnlineBMRThresholded"),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}

__all__ = ["OnlineLearner", "Param", "StreamShape", *sorted(_HOME)]


def __getattr__(name: str):
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'olb.learners' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))
