"""Linear and kernel online multi-label learners of paper 002 (adaptive label thresholding) and its baselines.

- :mod:`~olb.learners.linear.alt`: FALT(l) and SALT, on sparse or dense rows;
- :mod:`~olb.learners.linear.alt_kernel`: FALT(k), the kernelised FALT;
- :mod:`~olb.learners.linear.alt_loss`: the ALT loss and its repeated steps (compiled);
- :mod:`~olb.learners.linear.pa`: passive-aggressive binary relevance, PA-I/II-BR, linear and kernel;
- :mod:`~olb.learners.linear.support_vectors`: the support-vector store of the kernel learners;
- :mod:`~olb.learners.linear.rows`: a row's nonzero entries, sparse or dense;
- :mod:`~olb.learners.linear.olansgd`: OLANSGD*, a stand-in baseline of paper 003.
"""

from olb.learners.linear.alt import FALT, SALT
from olb.learners.linear.alt_kernel import FALTKernel
from olb.learners.linear.olansgd import OLANSGDStar
from olb.learners.linear.pa import PA1BR, PA1BRKernel, PA2BR, PA2BRKernel

__all__ = ["FALT", "FALTKernel", "OLANSGDStar", "PA1BR", "PA1BRKernel", "PA2BR", "PA2BRKernel", "SALT"]
