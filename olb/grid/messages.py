"""What the grid's rooms tell one another about a cell: its status.

The values are the strings MLflow, ``cells.csv`` and the tables show (``Status.FINISHED == "FINISHED"``), so a
status read back from any of them compares equal to its member.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """A cell's (or a grid run's) status."""

    FINISHED = "FINISHED"  # the cell ran to its end; its metrics are recorded
    FAILED = "FAILED"  # the cell raised, or its worker process died more often than backend.max_retries
    KILLED = "KILLED"  # the run was interrupted (Ctrl-C, SIGTERM) or abandoned by a driver that died
    UNAVAILABLE = "UNAVAILABLE"  # the cell's data set has no local copy and cannot be downloaded
    NOT_RUN = "NOT_RUN"  # planned, never run (an interrupted or lost grid)
