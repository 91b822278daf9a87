"""The boosters' per-round arithmetic, compiled with numba (see docs/speed.md), one module per paper.

Each formula lives here once, as a compiled function over numpy arrays; the boosters
(:mod:`~olb.learners.boosting.mlr`, :mod:`~olb.learners.boosting.multiclass`, :mod:`~olb.learners.boosting.topk`,
:mod:`~olb.learners.boosting.baselines`) stay plain classes that call them:

- :mod:`~olb.learners.boosting.rounds.shared`: what the adaptive boosters share (the experts' states, the step on
  alpha, Hedge, importance weights, dot products over labels, scipy's sigma);
- :mod:`~olb.learners.boosting.rounds.potentials`: the cost vectors of the exact pairwise potentials (OnlineBMR's,
  TopOpt's) and the sums of OnlineMBBM's exact 0-1 potentials;
- :mod:`~olb.learners.boosting.rounds.mlr`: Ada.OLMR's and OnlineBMR's rounds (paper 000);
- :mod:`~olb.learners.boosting.rounds.adaolm` and :mod:`~olb.learners.boosting.rounds.mbbm`: Adaboost.OLM's and
  OnlineMBBM's (paper 001);
- :mod:`~olb.learners.boosting.rounds.topk`: TopAda's (paper 004);
- :mod:`~olb.learners.boosting.rounds.oza`: Oza's chain of Poisson weights.

Ada.OLMR's, Adaboost.OLM's and OnlineBMR's updates are one call per round
(:func:`adaolmr_round`, :func:`adaolm_chain`, :func:`adaolm_update`, :func:`onlinebmr_round`,
:func:`topada_round`), OnlineMBBM's chain of weak predictions one call per round and per state not yet in its memo
(:func:`mbbm_chain`); Adaboost.OLM's and Oza's prequential passes over the VFDT forest one call per block of rows
(``adaolm.adaolm_pass``, ``oza.oza_pass``). :mod:`olb.kernels` loads each module's kernels by the module's name.

The results are bit-identical to the numpy expressions these functions replaced (``tests/regression``, and
``tests/test_rounds.py`` on random inputs): the same operations in the same order. Sums over a contiguous run of
values follow numpy's pairwise order (:func:`olb.weak.vfdt_sums.pairwise_sum`), sums across rows numpy's
sequential one; ``exp`` is the C library's, as numpy's; the logistic sigma is scipy's ``expit`` itself (its C
function, bound by symbol name so that numba's disk cache stays usable); a dot product over labels adds as
numpy's ``einsum`` does here (two interleaved partial sums, see :func:`row_dots`), a vector-matrix product as
the BLAS behind numpy's ``@`` does (one fused multiply-add per term, in order, see :func:`adaolm_chain`), and
OnlineMBBM's (k,) @ (k, k) products and TopAda's (N, P) @ (P,) rank losses by a BLAS ``dgemv`` as numpy does
(:func:`vector_matrix`, :func:`pair_rank_losses`). One exception: OnlineMBBM's 0-1 potentials
(``potentials.zero_one_no_error``) add their terms in order, where numpy's ``einsum`` adds them in partial sums
of its own; the two agree to ~2e-15 (``tests/test_potentials.py``).

numba's disk cache notices a change of the file that holds a cached function, not of the files holding the
functions it calls: the rounds of ``mlr``, ``adaolm`` and ``topk`` call those of ``shared`` (and ``mlr`` those
of ``potentials``), so after an edit of ``shared.py`` or ``potentials.py`` clear numba's cache of this folder
(``__pycache__/*.nbi``, ``*.nbc``) before running them under ``OLB_KERNELS=jit`` (the extension compiles each
kernel from its source).
"""

from olb.learners.boosting.rounds.adaolm import (
    adaolm_chain,
    adaolm_update,
    alpha_gradient,
    expected_costs,
    fma,
    logistic_cost_parts,
)
from olb.learners.boosting.rounds.mbbm import canonical_votes, cost_weights, mbbm_chain, relabelled_costs, vector_matrix
from olb.learners.boosting.rounds.mlr import adaolmr_round, logistic_rank_gradient, onlinebmr_round, rank_losses
from olb.learners.boosting.rounds.oza import oza_chain, poisson_draw
from olb.learners.boosting.rounds.potentials import pair_cost_vectors, pairwise_cost_vectors, zero_one_no_error
from olb.learners.boosting.rounds.shared import (
    ALPHA_BOUND,
    expert_states,
    expit,
    fed_weights,
    hedge_index,
    hedge_update,
    projected_alpha_step,
    row_dots,
    vote_states,
)
from olb.learners.boosting.rounds.topk import pair_logistic_gradients, pair_rank_losses, topada_round

__all__ = [
    "ALPHA_BOUND",
    "adaolm_chain",
    "adaolm_update",
    "adaolmr_round",
    "alpha_gradient",
    "canonical_votes",
    "cost_weights",
    "expected_costs",
    "expert_states",
    "expit",
    "fed_weights",
    "fma",
    "hedge_index",
    "hedge_update",
    "logistic_cost_parts",
    "logistic_rank_gradient",
    "mbbm_chain",
    "onlinebmr_round",
    "oza_chain",
    "pair_cost_vectors",
    "pair_logistic_gradients",
    "pair_rank_losses",
    "pairwise_cost_vectors",
    "poisson_draw",
    "projected_alpha_step",
    "rank_losses",
    "relabelled_costs",
    "row_dots",
    "topada_round",
    "vector_matrix",
    "vote_states",
    "zero_one_no_error",
]
