"""olb: online boosting and online multi-label learning, reproducible at scale."""

import os
from pathlib import Path

from olb.cache import use_private_numba_cache

__version__ = "0.2.0"


def conf_dir() -> Path:
    """The configuration directory (Hydra configs and the data set registry), found one way everywhere:
    ``$OLB_CONF_DIR`` if set, else ``conf/`` inside the package (in a checkout a link to the repository's
    ``conf/``; in an installed wheel the copy shipped with it)."""
    env = os.environ.get("OLB_CONF_DIR")
    return Path(env) if env else Path(__file__).parent / "conf"


use_private_numba_cache()  # before any olb module imports numba
