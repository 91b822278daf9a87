"""olb: online boosting and online multi-label learning, reproducible at scale."""

from olb.cache import use_private_numba_cache
from olb.paths import conf_dir, conf_dirs, conf_file

__version__ = "0.2.0"
__all__ = ["conf_dir", "conf_dirs", "conf_file", "__version__"]


use_private_numba_cache()  # before any olb module imports numba
