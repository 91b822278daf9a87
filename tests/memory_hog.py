"""A learner for the grid's memory tests (imported through the grid's ``imports``): at its first update it
allocates ``mb`` megabytes, 64 MB at a time (each page written, so that the memory is really used), holds them
``hold_s`` seconds (so that cells run at once overlap), and keeps them to the end of the stream; its planned model
memory is those ``mb``. With ``retain`` they stay in a module-level list after the cell, as a cache would keep them,
so the worker process still holds them when its cell is over. Every start appends a line to the file ``$OLB_MEMORY_HOG_LOG`` (if set), so a test can
count attempts ("start TIME"; "end TIME" once the hold is over)."""

from __future__ import annotations

import os
import time

import numpy as np

from olb.learners.base import OnlineLearner, Param, StreamShape
from olb.learners.costs import CostModel, Params
from olb.learners.registry import register


RETAINED: list[np.ndarray] = []  # what ``retain`` keeps after a cell


class MemoryHog(OnlineLearner):
    name = "_memory_hog"
    task = "multilabel"
    mb = Param(int, 0, low=0, doc="megabytes to allocate at the first update (0: none)")
    hold_s = Param(float, 0.0, low=0.0, doc="seconds to wait once they are allocated")
    retain = Param(bool, False, doc="keep them in a module-level list after the cell (the process holds them)")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.counts = np.zeros(self.n_labels)
        self.held: list[np.ndarray] = []
        self.t = 0

    def predict_one(self, x: np.ndarray) -> np.ndarray:
        return self.counts / max(self.t, 1)

    def learn_one(self, x: np.ndarray, y) -> None:
        if self.t == 0 and self.mb:
            _log("start")
            for _ in range(self.mb // 64):
                self.held.append(np.ones(64 * 2**20 // 8))
                time.sleep(0.02)
            time.sleep(self.hold_s)
            _log("end")
            if self.retain:
                RETAINED.extend(self.held)
        self.counts += np.asarray(y, float)
        self.t += 1


class MemoryHogCost(CostModel):
    """Its planned model memory: the ``mb`` it allocates."""

    def model_memory_mb(self, params: Params, shape: StreamShape) -> float:
        return params["mb"]


register(MemoryHog, MemoryHogCost())


def _log(event: str) -> None:
    if os.environ.get("OLB_MEMORY_HOG_LOG"):
        with open(os.environ["OLB_MEMORY_HOG_LOG"], "a") as f:
            f.write(f"{event} {time.time()}\n")
