"""Nearest-neighbour learners of paper 003: OML (online metric learning in label space) and its kNN baseline."""

from olb.learners.neighbors.knn import KNN
from olb.learners.neighbors.oml import OML

__all__ = ["KNN", "OML"]
