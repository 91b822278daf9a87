"""Online boosters over a pool of weak learners (papers 000, 001, 004) and paper 001's tree baselines.

- :mod:`~olb.learners.boosting.mlr`: multi-label ranking boosters, OnlineBMR and Ada.OLMR (paper 000);
- :mod:`~olb.learners.boosting.multiclass`: OnlineMBBM and Adaboost.OLM (paper 001), their skeleton and memos;
- :mod:`~olb.learners.boosting.baselines`: the best VFDT in hindsight and Oza's online bagging-boosting (paper 001);
- :mod:`~olb.learners.boosting.topk`: TopOpt and TopAda under top-k feedback (paper 004), with the randomized
  rankings of :mod:`~olb.learners.boosting.exploration`;
- :mod:`~olb.learners.boosting.potentials`: the exact potentials and cost vectors of the "optimal" boosters, and
  their draws and losses;
- :mod:`~olb.learners.boosting.common`: the hyperparameters and weak-learner pool they share;
- :mod:`~olb.learners.boosting.rounds`: their per-round arithmetic (gradients, Hedge, steps on alpha), compiled, a
  module per paper.
"""

from olb.learners.boosting.baselines import BestVFDT, OzaBoost
from olb.learners.boosting.mlr import AdaOLMR, OnlineBMR
from olb.learners.boosting.multiclass import AdaBoostOLM, OnlineMBBM
from olb.learners.boosting.topk import TopAda, TopOpt

__all__ = ["AdaBoostOLM", "AdaOLMR", "BestVFDT", "OnlineBMR", "OnlineMBBM", "OzaBoost", "TopAda", "TopOpt"]
