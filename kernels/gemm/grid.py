"""The GEMM's 3-D task grid and how its tasks land on cores.

Ascend launches ``blockDim`` cores, one integer; there is no 3-D launch. A GEMM's tiling
defines a grid of tasks: X over row panels of C, Y over column panels, Z splitting K. The
kernel's own code (``GetBlockIdx()``) walks the tasks in some order and takes every
blockDim-th one, so tasks run in waves of blockDim. The order is the policy:

* ``row_major``: x outer, y inner; consecutive cores share the A panel;
* ``col_major``: y outer, x inner; consecutive cores share the B panel;
* ``swizzle``: groups of ``group`` row panels walked column by column, so one wave touches
  few A and few B panels and they stay in L2 (the L2-friendly order);
* ``cluster``: the k cores of a cluster (what-if) take tasks with the same x and
  neighbouring y, so their A fetch can be shared by multicast, and clusters of one wave
  share B columns through L2.
Split-K partials of one tile (z) are always adjacent, so they run in the same wave.

Which core takes which task in that order is ``balance`` (kernels.common.scheduling):
``round_robin`` is the kernel's loop above (task i on core i mod blockDim, in waves);
``static`` gives each core a contiguous block; ``lpt`` balances the estimated costs
(edge panels and the last K split are smaller). A task's "wave" is its rank on its core.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.common.scheduling import assign, core_order

POLICIES = ("row_major", "col_major", "swizzle", "cluster")
BALANCES = ("round_robin", "static", "lpt")


@dataclass(frozen=True, eq=False)
class TaskGrid:
    """Tasks in launch order with their grid coordinates, core slot and wave."""

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    slot: np.ndarray  # 0 .. block_dim-1: the GetBlockIdx() that runs the task
    wave: np.ndarray  # index of the task among its slot's tasks
    shape: tuple[int, int, int]  # (X, Y, Z)
    block_dim: int

    @property
    def waves(self) -> int:
        return int(self.wave.max()) + 1 if len(self.wave) else 0

    @property
    def tail_tasks(self) -> int:
        """Tasks in the last, partly filled wave (0 when the grid divides evenly)."""
        return len(self.x) % self.block_dim


def _order(X: int, Y: int, policy: str, group: int) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of every output panel in the policy's walk order."""
    x, y = np.meshgrid(np.arange(X), np.arange(Y), indexing="ij")
    x, y = x.ravel(), y.ravel()
    if policy == "row_major":
        key = (x, y)
    elif policy == "col_major":
        key = (y, x)
    elif policy == "swizzle":
        key = (x // group, y, x % group)
    else:  # cluster: blocks of `group` columns; within a block x-major
        key = (y // group, x, y % group)
    order = np.lexsort(key[::-1])
    return x[order], y[order]


def task_grid(X: int, Y: int, Z: int, block_dim: int, policy: str, group: int,
              balance: str = "round_robin", cost=None) -> TaskGrid:
    """The grid's tasks in launch order; with ``round_robin`` task i runs on slot
    i % block_dim, wave i // block_dim (the kernel's ``for (t = GetBlockIdx(); t < tasks;
    t += GetBlockNum())``); other balances map them by ``cost(x, y, z)`` (cycles)."""
    if policy not in POLICIES:
        raise ValueError(f"policy {policy!r} is not one of {POLICIES}")
    px, py = _order(X, Y, policy, max(1, group))
    x, y = np.repeat(px, Z), np.repeat(py, Z)
    z = np.tile(np.arange(Z), len(px))
    costs = cost(x, y, z) if cost is not None else np.ones(len(x))
    slot = assign(costs, block_dim, balance)
    order, ordinal = core_order(slot)
    wave = np.empty(len(x), np.int64)
    wave[order] = ordinal
    return TaskGrid(x, y, z, slot, wave, (X, Y, Z), block_dim)
