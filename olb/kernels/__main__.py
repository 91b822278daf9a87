"""``python -m olb.kernels``: build the extension (:func:`olb.kernels.compiling.main`)."""

import sys

from olb.kernels.compiling import main

sys.exit(main())
