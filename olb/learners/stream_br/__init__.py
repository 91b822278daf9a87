"""Compiled equivalents of river's binary-relevance stream learners: river's predicted label sets on every example,
at a fraction of its CPU (``benchmarks/bench_stream_br.py`` measures both side by side)."""

from olb.learners.stream_br.hoeffding import BRHT
from olb.learners.stream_br.knn import BRKNN

__all__ = ["BRHT", "BRKNN"]
