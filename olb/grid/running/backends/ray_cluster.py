"""``ray`` with an address (``backend.address``, else the environment's ``RAY_ADDRESS``, which ``ray job
submit`` sets): the grid connects to that Ray cluster and leaves it running. Its token comes from
``RAY_AUTH_TOKEN_PATH``, as ``slurm/olb_grid.sbatch`` sets it."""

from __future__ import annotations

from types import ModuleType

from olb.grid.running.backends.ray_base import RayBackend
from olb.grid.running.backends.ray_head import check_head, shutdown_within
from olb.grid.planning.config import cluster_address


class RayClusterBackend(RayBackend):
    """Cells on a running Ray cluster; disconnects at the end (from a lost head too), never stops the cluster. A
    head that does not answer before the grid starts is :class:`~olb.grid.lost.RayLost` (exit 4)."""

    def init_kwargs(self) -> dict:
        return {**self._common_kwargs(), "address": cluster_address(self.cfg)}

    def connect(self, ray: ModuleType, kwargs: dict[str, object]) -> None:
        check_head(cluster_address(self.cfg), self.cfg.head_timeout_s)  # ray.init would retry for minutes
        ray.init(**kwargs)

    def stop(self) -> None:
        import ray

        super().stop()
        if self.owned and ray.is_initialized():
            self._shutdown(ray)
        elif self._head_lost and ray.is_initialized():  # a cluster without its head: disconnect from it
            shutdown_within(ray, self.cfg.head_timeout_s)
        self.owned = False
