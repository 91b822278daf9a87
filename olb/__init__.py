"""olb: online boosting and online multi-label learning, reproducible at scale."""

__version__ = "0.1.0"
