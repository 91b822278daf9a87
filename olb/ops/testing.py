"""Fault injection for the grid's tests (and for trying the grid's reliability by hand).

Importing this module registers ``_grid_stub``: a real but trivial multi-label ranker (it predicts the
running label frequencies, ties broken by the seed) that can be told to be slow, to raise, or to kill
its worker process once. Use it through the grid's ``imports`` option, which imports it in the driver and
in every Ray worker::

    python -m olb.grid imports=[olb.ops.testing] algorithms=[_grid_stub] +algorithm._grid_stub.params.fail_at=[-1,5]
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

from olb.grid.running.worker import in_ray_worker
from olb.learners.base import OnlineLearner, Param
from olb.learners.registry import register


def crash_marker(token: int) -> Path:
    return Path(tempfile.gettempdir()) / f"olb-grid-crash-once-{token}"


@register
class GridStub(OnlineLearner):
    """Label frequencies as scores; ``delay_s``, ``fail_at`` and ``crash_token`` inject faults."""

    name = "_grid_stub"
    task = "multilabel"
    delay_s = Param(float, 0.0, low=0.0, doc="sleep this long before the first update")
    fail_at = Param(int, -1, low=-1, doc="raise RuntimeError at this update (-1: never)")
    crash_token = Param(
        int,
        0,
        low=0,
        doc="non-zero: the process dies (os._exit) at the first update, once "
        "per token (a marker file in the temp dir remembers it)",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.counts = np.zeros(self.n_labels)
        self.jitter = self.rng.random(self.n_labels) * 1e-6
        self.t = 0

    def predict_one(self, x: np.ndarray) -> np.ndarray:
        return self.counts / max(self.t, 1) + self.jitter

    def learn_one(self, x: np.ndarray, y: np.ndarray) -> None:
        if self.t == 0:
            if self.delay_s:
                time.sleep(self.delay_s)
            if self.crash_token:
                marker = crash_marker(self.crash_token)
                if not marker.exists():
                    if not in_ray_worker():
                        raise RuntimeError("_grid_stub: crash_token kills the process: only inside a Ray worker")
                    marker.touch()
                    os._exit(3)
        if self.t == self.fail_at:
            raise RuntimeError(f"_grid_stub: injected failure at update {self.t}")
        self.counts += np.asarray(y, float)
        self.t += 1
