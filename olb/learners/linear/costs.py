"""The cost models of the linear and kernel learners (:mod:`olb.learners.linear`)."""

from __future__ import annotations

from olb.learners.base import StreamShape
from olb.learners.costs import MB_PER_FLOAT, ROUND_OVERHEAD_S, CostModel, Params


class LinearRowCost(CostModel):
    """A round of a linear scorer: the row's entries against a d x q matrix, then a rank-one update; its memory
    the base's few d x q matrices."""

    def cost_per_example_s(self, params: Params, shape: StreamShape) -> float:
        """~80 us of protocol plus 0.02 us per label and 0.08 us per feature, with the features capped at 2000.

        Fitted on FALT, SALT, PA-I/II-BR and OLANSGD* over ten multi-label data sets. The per-feature term is
        mostly the cost of reading a sparse row; these learners read only its nonzeros, so a sparse data set with
        far more features (rcv1v2) costs about as much per row as bibtex (the registry does not record nonzeros).
        """
        return ROUND_OVERHEAD_S + 2e-8 * shape.n_labels + 8e-8 * min(shape.n_features, 2000)


class SupportVectorCost(CostModel):
    """A kernel learner's round: a kernel row against its growing store of support vectors."""

    def cost_per_example_s(self, params: Params, shape: StreamShape) -> float:
        """~80 us of protocol, 0.076 us per feature and 0.16 ns per support-vector feature: a kernel row costs
        (support vectors) x d, and the support vectors grow with the stream, taken here as 3/4 of the
        training rows (their stream average when most rows become support vectors).

        Fitted on PA-I/II-BR(k) and FALT(k) (RBF, min-max scaled) over six multi-label data sets.
        """
        support_vectors = 0.75 * (shape.n_train or 0)
        return ROUND_OVERHEAD_S + shape.n_features * (7.6e-8 + 1.6e-10 * support_vectors)

    def model_memory_mb(self, params: Params, shape: StreamShape) -> float:
        """At most every training row as a support vector (dense, with its norm and q + 1 coefficients), twice:
        the store doubles by copying."""
        return 2 * MB_PER_FLOAT * (shape.n_train or 0) * (shape.n_features + shape.n_labels + 2)
