"""Where olb's configuration lives: its own ``conf/`` and the directories of one's own (``$OLB_CONF_DIR``); whether
olb can write where it is asked to."""

import os
import tempfile
from pathlib import Path


def conf_dir() -> Path:
    """olb's own configuration directory (Hydra configs, the data set registry, the papers' values): ``conf/``
    inside the package (in a checkout a link to the repository's ``conf/``; in an installed wheel the copy
    shipped with it)."""
    return Path(__file__).parent / "conf"


def conf_dirs() -> list[Path]:
    """The configuration search path, first match first: the directories named by ``$OLB_CONF_DIR`` (one, or
    several joined by ``os.pathsep``), then olb's own :func:`conf_dir`. A directory of one's own holds only what
    it adds or replaces (``dataset/NAME.yaml``, ``experiment/NAME.yaml``, ...); see docs/data.md."""
    own = [Path(p).expanduser() for p in os.environ.get("OLB_CONF_DIR", "").split(os.pathsep) if p]
    dirs = [*own, conf_dir()]
    return [d for i, d in enumerate(dirs) if d.resolve() not in {e.resolve() for e in dirs[:i]}]


def conf_file(relative: str) -> Path:
    """The first ``relative`` file on the search path (:func:`conf_dirs`); olb's own when none has it."""
    return next((d / relative for d in conf_dirs() if (d / relative).is_file()), conf_dir() / relative)


def unwritable(folder: Path, create: bool = True) -> str | None:
    """Why olb cannot write in ``folder``, else None. With ``create``, a folder that does not exist yet is judged
    by its nearest existing parent (where it would be created); without, it must exist. Tried by creating and
    removing a file: permissions alone do not tell (root, a read-only file system)."""
    existing = folder
    while create and not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"no such folder: {existing}" if not existing.exists() else f"not a folder: {existing}"
    try:
        tempfile.TemporaryFile(dir=existing).close()
    except OSError as err:
        return f"cannot write in {existing.absolute()}: {err.strerror or err}"
    return None
