"""Where olb's configuration lives: its own ``conf/`` and the directories of one's own (``$OLB_CONF_DIR``); whether
olb can write where it is asked to; the sources of a package, read without importing them."""

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


def python_sources(package: Path) -> list[Path]:
    """The ``.py`` files below ``package``, links not followed (``__pycache__``, where numba keeps its cache files,
    is not entered)."""
    sources, folders = [], [package]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    folders.append(Path(entry.path))
                elif entry.name.endswith(".py") and entry.is_file(follow_symlinks=False):
                    sources.append(Path(entry.path))
    return sources


def module_name(path: Path, package: Path) -> str:
    """The dotted name of the module whose source is ``path``, below ``package`` (``olb/learners/elm.py`` ->
    ``olb.learners.elm``, a package's ``__init__.py`` -> the package)."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
