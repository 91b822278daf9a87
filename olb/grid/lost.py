"""What ends a grid early besides an interruption: the Ray head or the tracking server stops answering.

Both are raised by the parts that notice (:class:`~olb.grid.running.backends.ray_base.RayBackend` polls the head, the tracker's
writes give up after ``tracking.timeout_s``) and caught by :func:`~olb.grid.running.fanout.fan_out`, which cancels the
running cells; the grid then writes the table of what finished and exits with its own code (``EXIT_LOST``).
"""

from __future__ import annotations


class InfrastructureLost(RuntimeError):
    """A part the grid depends on stopped answering; ``what`` names it ("ray" or "tracking")."""

    what = ""


class RayLost(InfrastructureLost):
    what = "ray"


class TrackingLost(InfrastructureLost):
    what = "tracking"
