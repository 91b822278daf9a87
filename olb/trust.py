"""What olb reads its configuration from, checked before any work (``olb.grid``, ``olb-run``).

Every folder of the config search path (``$OLB_CONF_DIR``'s, olb's own ``conf/``, any the command line adds) and
every file in them must be the user's own or root's, and writable by no one else: the caches' rule
(:func:`olb.cache.owner_problem`), since whoever can change a config can change what runs. Each YAML file is
bounded before Hydra reads it (:data:`MAX_FILE_BYTES`; :data:`MAX_NODES` once its aliases are expanded, so that
aliases cannot multiply it; :data:`MAX_NESTING`), names no callable (``_target_``, Hydra ``callbacks``, logging
factories: Hydra calls them while it composes or launches; olb's configs name none) and adds no folder to the
search path; the ``defaults`` lists include no config in a loop or deeper than :data:`MAX_INCLUDE_DEPTH`.
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

import yaml

from olb.cache import folder_problem, owner_problem

MAX_FILE_BYTES = 1_000_000
"""A config file's size at most (olb's largest is 6 kB)."""

MAX_NODES = 100_000
"""A YAML file's nodes at most, each alias counted as the nodes it repeats (olb's largest has about 700)."""

MAX_NESTING = 64
"""Mappings and lists nested in one another at most."""

MAX_INCLUDE_DEPTH = 16
"""Configs included through ``defaults`` lists one inside another at most (olb's own go 2 deep)."""

ALLOWED_TARGETS: frozenset[str] = frozenset()
"""The callables a config file may name (``_target_``, a Hydra callback): olb's configs name none."""

_CALLABLE_KEYS = ("_target_", "()")  # Hydra's instantiate, logging.config.dictConfig's factories
_SEARCH_PATH = "hydra.searchpath"


def conf_problems(dirs: Sequence[Path]) -> list[str]:
    """One line per problem of the config folders ``dirs`` (first match first) and their files; ``[]``: none."""
    problems: list[str] = []
    configs: dict[str, tuple[Path, object]] = {}  # "group/name" -> (its file, its parsed YAML), first on the path
    for root in dirs:
        problems += _tree_problems(Path(root), configs)
    return problems + _include_problems(configs)


def _tree_problems(root: Path, configs: dict[str, tuple[Path, object]]) -> list[str]:
    """The problems of one config folder, every level and file of it; its configs added to ``configs``."""
    problem = folder_problem(root, root_ok=True)
    if problem or not root.is_dir():  # nothing below a refused folder is read, nor checked
        return [f"config folder {root} {problem}"] if problem else []
    problems: list[str] = []
    seen = {_identity(root)}
    for folder, subfolders, files in os.walk(root, followlinks=True):  # Hydra follows links too
        for name in sorted(subfolders):
            path = Path(folder, name)
            problem = folder_problem(path, root_ok=True)
            if problem:
                problems.append(f"config folder {path} {problem}")
            if problem or _identity(path) in seen:  # a refused folder, or a link back up the tree: not descended
                subfolders.remove(name)
            seen.add(_identity(path))
        for name in sorted(files):
            path = Path(folder, name)
            problems += _file_problems(root, path, configs)
    return problems


def _identity(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_dev, info.st_ino


def _file_problems(root: Path, path: Path, configs: dict[str, tuple[Path, object]]) -> list[str]:
    try:
        info = path.stat()
    except FileNotFoundError:  # a dangling link: Hydra finds nothing there either
        return []
    problem = owner_problem(path, info, root_ok=True)
    if problem:
        return [f"config file {path} {problem}"]
    if path.suffix not in (".yaml", ".yml") or not stat.S_ISREG(info.st_mode):
        return []
    if info.st_size > MAX_FILE_BYTES:
        return [f"config file {path} has {info.st_size:,} bytes, more than a config file may ({MAX_FILE_BYTES:,})"]
    text = path.read_bytes()
    problem = bounds_problem(text)
    if problem:
        return [f"config file {path} {problem}"]
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError:
        return []  # Hydra reports malformed YAML itself, with the line
    relative = path.relative_to(root).with_suffix("").as_posix()
    configs.setdefault(relative, (path, data))
    header = itertools.takewhile(lambda line: line.startswith(b"#") or not line.strip(), text.splitlines())
    is_global = relative == "config" or any(b"@package _global_" in line for line in header)  # Hydra's header
    prefix = "" if is_global else ".".join(relative.split("/")[:-1])
    return [f"config file {path}: {problem}" for problem in callable_problems(data, prefix)]


def bounds_problem(text: bytes) -> str | None:
    """Why the YAML ``text`` is too big to read once its aliases are expanded, or nested too deep; ``None``: it
    is neither (malformed YAML is left to the reader, which names the line)."""
    sizes: dict[str, int] = {}  # anchor -> the nodes it stands for
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, nodes counted when it opened)
    nodes = 0
    try:
        for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(event, yaml.AliasEvent):
                nodes += sizes.get(event.anchor, 1)
            elif isinstance(event, yaml.ScalarEvent):
                nodes += 1
                if event.anchor:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.CollectionStartEvent):
                open_nodes.append((event.anchor, nodes))
                nodes += 1
                if len(open_nodes) > MAX_NESTING:
                    return f"nests mappings or lists more than {MAX_NESTING} deep"
            elif isinstance(event, yaml.CollectionEndEvent):
                anchor, start = open_nodes.pop()
                if anchor:
                    sizes[anchor] = nodes - start
            if nodes > MAX_NODES:
                return (
                    f"expands to more than {MAX_NODES:,} nodes (YAML aliases repeat what their anchor holds): "
                    "too big for a config file"
                )
    except yaml.YAMLError:
        return None
    return None


def callable_problems(data: object, prefix: str = "") -> list[str]:
    """One line per key of the parsed config ``data`` (at the package ``prefix``, dotted) that names a callable
    not in :data:`ALLOWED_TARGETS` (Hydra callbacks name theirs with ``_target_``) or adds to the search path."""
    problems = []
    for key, value in _items(data, prefix):
        last = key.rsplit(".", 1)[-1]
        if last in _CALLABLE_KEYS and str(value) not in ALLOWED_TARGETS:  # a Hydra callback's too
            problems.append(f"{key}={value!r} names a callable, which a config file may not")
        elif last == "class" and key.startswith("hydra.") and not str(value).startswith("logging."):
            problems.append(f"{key}={value!r} names a logging class outside the logging module")
        elif key == _SEARCH_PATH and value:
            problems.append(f"{key}: a config file may not add folders to the search path (use OLB_CONF_DIR)")
    return problems


def _items(data: object, prefix: str) -> Iterator[tuple[str, object]]:
    """(dotted key, value) of every mapping entry in ``data``, nested ones too."""
    entries = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in entries:
        dotted = f"{prefix}.{key}" if prefix else str(key)
        yield dotted, value
        yield from _items(value, dotted)


def _include_problems(configs: dict[str, tuple[Path, object]]) -> list[str]:
    """A config that includes itself (through its ``defaults`` list, directly or not), or a chain of includes
    deeper than :data:`MAX_INCLUDE_DEPTH`: one line each, naming the chain."""
    problems: list[str] = []
    done: set[str] = set()

    def visit(name: str, chain: list[str]) -> None:
        if name in chain:
            loop = " -> ".join([*chain[chain.index(name) :], name])
            problems.append(f"config file {configs[name][0]} includes itself through its defaults list: {loop}")
        elif len(chain) >= MAX_INCLUDE_DEPTH:
            problems.append(
                f"config file {configs[chain[0]][0]}: its defaults lists include configs more than "
                f"{MAX_INCLUDE_DEPTH} deep: {' -> '.join(chain[:4])} -> ..."
            )
        elif name not in done:
            for included in _included(name, configs[name][1]):
                if included in configs:
                    visit(included, [*chain, name])
            done.add(name)

    for name in configs:
        visit(name, [])
    return problems


def _included(name: str, data: object) -> list[str]:
    """The configs (``group/name``) the ``defaults`` list of config ``name`` includes, as far as they are named
    in it (an interpolated choice is left to Hydra)."""
    group = name.rpartition("/")[0]
    defaults = data.get("defaults") if isinstance(data, dict) else None
    out = []
    for entry in defaults if isinstance(defaults, list) else []:
        if isinstance(entry, str):
            out.append(_config_path(group, _bare(entry)))
        elif isinstance(entry, dict):
            for key, choice in entry.items():
                choices = choice if isinstance(choice, list) else [choice]
                sub = _config_path(group, _bare(str(key)))
                out += [f"{sub}/{c}" for c in choices if isinstance(c, str) and "${" not in c]
    return [path for path in out if path and "${" not in path]


def _bare(entry: str) -> str:
    """A defaults entry without its keywords (``optional``, ``override``) and package (``@...``)."""
    for keyword in ("optional ", "override "):
        entry = entry.strip().removeprefix(keyword)
    return entry.split("@", 1)[0].strip()


def _config_path(group: str, entry: str) -> str:
    if entry == "_self_":
        return ""
    return entry.lstrip("/") if entry.startswith("/") or not group else f"{group}/{entry}"
