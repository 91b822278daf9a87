"""Online multiclass boosting (paper 001): OnlineMBBM (Algorithm 1) and Adaboost.OLM (Algorithm 2).

Every round, the N weak learners (VFDTs) see x and give distributions h^i over the k classes. Learner i is
handed a cost matrix computed from the votes s^{i-1} of the learners before it (the true label is not
known yet), and its single-label prediction is the label of least expected cost under its distribution,
l^i = argmin_l sum_r h^i[r] C[r, l] (the paper leaves this to the weak learner; the authors' code does
this with the unnormalized matrix). The votes are s^i = s^{i-1} + alpha^i e_{l^i}, and expert i predicts
argmax s^i (all ties broken at random).

When the label y arrives, learner i is fed (x, y) with an importance weight read off C^i:

* OnlineMBBM: alpha = 1, C^i[r, l] = phi^r_{N-i}(s^{i-1} + e_l), the exact 0-1 potential of the biased
  uniform baseline (:func:`olb.learners.boosting.potentials.mbbm_cost_matrix`, memoized on the canonical state);
  the learner predicts with the normalized matrix D^i of eq. (5), the one Algorithm 1 passes to it;
  weight w^i = sum_l (C^i[y, l] - C^i[y, y]); the prediction is the last expert's (simple majority vote).
* Adaboost.OLM: C^i is the gradient of the multiclass logistic loss at s^{i-1} (eq. 9); weight
  w^i = -C^i[y, y] / (k - 1); alpha^i follows online gradient descent on the logistic loss with step
  2 sqrt(2) / ((k - 1) sqrt(t)), projected to [-2, 2]; the prediction is the expert drawn by Hedge,
  and Hedge's weights are v^i <- v^i exp(-1(yhat^i != y)).

Where the authors' code (``docs/authors_code.md``) differs from the paper, the paper is the
default and the code's choice a named option: ``authors_weights`` (their importance weights),
``authors_gradient`` (their alpha-derivative, wrong when l^i = y; section 5 item 8),
``authors_horizon`` (one more remaining draw in the potentials; item 9), ``weak_prediction="expected_cost"``
for OnlineMBBM (their unnormalized C^i) and ``potential_samples=100`` (their Monte Carlo potentials).
"""

from olb.learners.boosting.multiclass.adaolm import (
    AUTHORS_FIRST_WEIGHT,
    AdaBoostOLM,
    logistic_cost_matrix,
    logistic_loss,
)
from olb.learners.boosting.multiclass.booster import AUTHORS_WEIGHT_CONSTANTS, AUTHORS_WEIGHT_FLOOR, MulticlassBooster
from olb.learners.boosting.multiclass.mbbm import AUTHORS_MBBM_FACTOR, OnlineMBBM
from olb.learners.boosting.multiclass.mbbm_memo import MBBMCosts

__all__ = [
    "AUTHORS_FIRST_WEIGHT",
    "AUTHORS_MBBM_FACTOR",
    "AUTHORS_WEIGHT_CONSTANTS",
    "AUTHORS_WEIGHT_FLOOR",
    "AdaBoostOLM",
    "MBBMCosts",
    "MulticlassBooster",
    "OnlineMBBM",
    "logistic_cost_matrix",
    "logistic_loss",
]
