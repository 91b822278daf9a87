"""What the stages of one grid run share (:mod:`olb.grid.driver.app`) and what they produced before the finish
(:mod:`olb.grid.driver.finish`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TextIO


from olb.grid.planning.config import GridBase
from olb.grid.running.backend import Backend
from olb.grid.datacheck import DataCheck
from olb.grid.running.fanout import FanoutStats
from olb.grid.messages import CellOutcome, Choice, SelectionStats
from olb.grid.planning.plan import Plan
from olb.grid.recording.recorder import Recorder
from olb.grid.recording.tracker import Tracker


@dataclass
class GridRun:
    """What every stage of one invocation works with: the config, the plan and its data, where cells run and where
    they are recorded, the output folder, the command line's overrides, the console and the start time."""

    cfg: GridBase
    plan: Plan
    data: DataCheck
    backend: Backend
    backend_reason: str
    tracker: Tracker
    out: Path
    overrides: list[str]
    stream: TextIO
    t_start: float


@dataclass
class Stages:
    """What the stages before the report produced: every cell's outcome, the fan-out's record and statistics,
    how many cells were resumed or unavailable, the parent run, and the cross-validated choices."""

    outcomes: dict[str, CellOutcome]
    recorder: Recorder
    fan: FanoutStats
    n_resumed: int
    n_unavailable: int
    parent_id: str | None
    choices: list[Choice]
    cv_stats: SelectionStats | None  # None: no entry is cross-validated
