"""Exact potentials of the "optimal" boosters: OnlineBMR, TopOpt (top-k BBM) and OnlineMBBM.

A potential is phi^n(s) = E[L(s + X)], where X is the sum of n i.i.d. basis vectors drawn from a
baseline distribution u (paper 000 eq. 1, paper 001 eq. 3, paper 004 Sec. 3.2.2). The authors
estimate it by Monte Carlo with M = 100 samples; here it is computed exactly.

- Pairwise losses (OnlineBMR, TopOpt; :mod:`~olb.learners.boosting.potentials.pairwise`): each pair (l, r)
  only sees D_n = X_l - X_r, whose law is a trinomial marginal shared by all pairs. ``DifferenceLaw``
  (:mod:`~olb.learners.boosting.potentials.draws`, with the baselines) tabulates it once per baseline, so a
  pair costs O(1) and a cost vector O(|Y| |Y^c|) work (OnlineBMR's: one compiled call per round,
  ``olb.learners.boosting.rounds.potentials.pairwise_cost_vectors``; TopOpt's ``pair_cost_vectors``).
- 0-1 loss (OnlineMBBM; :mod:`~olb.learners.boosting.potentials.zero_one`): ``ZeroOnePotential`` conditions on
  X_r and counts bounded occupancies with truncated exponential generating functions (see its docstring).
- The losses themselves and the authors' Monte Carlo estimate: :mod:`~olb.learners.boosting.potentials.losses`.

Paper numbers: 000 = Jung & Tewari 2018 (OnlineBMR), 001 = Jung, Goetz & Tewari 2017 (OnlineMBBM),
004 = Raman et al. (top-k feedback, TopOpt).
"""

from olb.learners.boosting.potentials.draws import baseline, baseline_probs
from olb.learners.boosting.potentials.losses import (
    monte_carlo_potential,
    pair_hinge_loss,
    pairwise_hinge_loss,
    zero_one_loss,
)
from olb.learners.boosting.potentials.pairwise import PairwisePotential, TopkPairPotential
from olb.learners.boosting.potentials.zero_one import ZeroOnePotential, mbbm_cost_matrix, zero_one_potential

__all__ = [
    "baseline_probs",
    "baseline",
    "pairwise_hinge_loss",
    "pair_hinge_loss",
    "zero_one_loss",
    "PairwisePotential",
    "TopkPairPotential",
    "ZeroOnePotential",
    "zero_one_potential",
    "mbbm_cost_matrix",
    "monte_carlo_potential",
]
