"""The JVM that runs MOA's learners (:mod:`olb.learners.moa`): what the machine needs, and its start.

One per process (:func:`start_jvm`), started by the learner's warm-up before a cell's clock starts,
with :data:`JVM_OPTIONS`; ``JAVA_HOME``, when set, names the Java to use (else JPype's search: the
``java`` on the system). :func:`missing_requirements` says what the machine lacks, for the grid's refusal.

jpype is imported when the JVM is started or checked, never when this module is.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from pathlib import Path

JVM_HEAP_MB = 1024
"""The JVM's maximum heap (``-Xmx``): MOA's models live there (a Hoeffding tree caps itself at 32 MB by default)."""

JVM_YOUNG_MB = 32
"""The heap's young generation (``-Xmn``), where each round's short-lived copies of the row go: fixed, so that the
process's memory is the JVM's footprint plus the models, not however much garbage a collector lets pile up."""

JVM_OPTIONS = (f"-Xmx{JVM_HEAP_MB}m", f"-Xmn{JVM_YOUNG_MB}m", "-XX:+UseSerialGC")
"""The JVM's options. The serial collector: one collector thread, as a worker process runs one cell at a time on one
CPU (a parallel collector's threads would take the other cells' CPUs)."""

INSTALL_JAVA = "Java is not installed (Debian: apt-get install default-jre-headless)"
INSTALL_MOA = 'pip install "olb[moa]"'


def moa_jar() -> Path | None:
    """MOA's jar as CapyMOA ships it (``capymoa/jar/moa.jar``), found without importing CapyMOA; None without it."""
    spec = importlib.util.find_spec("capymoa")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        jar = Path(folder) / "jar" / "moa.jar"
        if jar.is_file():
            return jar
    return None


def jvm_library() -> str | None:
    """The JVM's shared library: under ``$JAVA_HOME`` when it is set (no other is tried then), else JPype's search
    (the system's ``java``, ``/usr/lib/jvm``); None when there is none."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        for candidate in ("lib/server/libjvm.so", "jre/lib/amd64/server/libjvm.so", "lib/server/libjvm.dylib"):
            if (Path(java_home) / candidate).is_file():
                return str(Path(java_home) / candidate)
        return None
    import jpype

    try:
        return jpype.getDefaultJVMPath()
    except jpype.JVMNotFoundException:
        return None


def missing_requirements() -> list[str]:
    """What this machine lacks to run MOA's learners, as one sentence naming what to install; empty when nothing."""
    jpype = sys.modules.get("jpype")
    if jpype is not None and jpype.isJVMStarted():  # asked again by every cell of a process: once is enough
        return []
    if importlib.util.find_spec("jpype") is None or moa_jar() is None:
        return [f"MOA's learners need jpype1 and capymoa (MOA's jar), not installed: {INSTALL_MOA}"]
    library = jvm_library()
    if library is None:
        where = f" under JAVA_HOME={os.environ['JAVA_HOME']}" if os.environ.get("JAVA_HOME") else ""
        return [f"MOA's learners need a Java runtime: {INSTALL_JAVA}; no JVM found{where}"]
    return [f"MOA's code {path} {problem}" for path, problem in _code_problems([Path(library), moa_jar()])]


def _code_problems(files) -> list[tuple[Path, str]]:
    """The files of code the JVM loads (its library, MOA's jar), where they lead, that another user than you or
    root owns or may write to: whoever can change them can change what runs (olb's rule for what it reads)."""
    from olb.cache import owner_problem

    problems = []
    for path in {Path(os.path.realpath(file)) for file in files if file is not None}:
        problem = owner_problem(path, path.stat(), root_ok=True)
        if problem:
            problems.append((path, problem))
    return sorted(problems)


@functools.cache
def start_jvm() -> bool:
    """Start this process's JVM with MOA's jar, once (a JVM cannot restart in a process); whether it started now.
    Refuses, naming what to install, when the machine lacks it."""
    problems = missing_requirements()
    if problems:
        raise RuntimeError(problems[0])
    import jpype
    import jpype.imports  # noqa: F401 - Java packages as Python modules

    if jpype.isJVMStarted():
        return False
    # interrupt=False: Ctrl-C stays Python's (the JVM would otherwise take SIGINT over)
    jpype.startJVM(jvm_library(), *JVM_OPTIONS, classpath=[str(moa_jar())], convertStrings=False, interrupt=False)
    return True
