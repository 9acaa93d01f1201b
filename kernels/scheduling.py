"""Task-to-core assignment: which core runs which independent task, and in what order.

Policies are pure functions of the task list and the core count (deterministic). Every
kernel with independent tasks (decode attention, KV append) maps its tasks through here;
the load-balancing work adds cost-aware policies next to these two.

* ``static``: contiguous blocks of ceil(tasks / cores) tasks per core, as the blog's
  ``seqs_per_block = (batch_size + block_num - 1) / block_num`` does (the last cores may
  get fewer tasks, or none).
* ``round_robin``: task i runs on core i mod cores.

Each core runs its tasks in ascending task order.
"""
from __future__ import annotations

import numpy as np

from hardware_presets.errors import InputError

POLICIES = ("static", "round_robin")


def assign(n_tasks: int, n_cores: int, policy: str) -> np.ndarray:
    """Core slot (0 .. n_cores - 1) of every task."""
    if policy not in POLICIES:
        raise InputError("policy", policy, "one of " + ", ".join(POLICIES))
    if n_cores < 1:
        raise InputError("cores", n_cores, "at least 1")
    tasks = np.arange(int(n_tasks), dtype=np.int64)
    if policy == "static":
        return tasks // max(1, -(-int(n_tasks) // n_cores))
    return tasks % n_cores


def core_order(slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tasks in execution order (core by core, ascending task id within a core) and each
    task's ordinal on its core (0, 1, 2, ...), in that same order."""
    order = np.lexsort((np.arange(len(slots)), slots))
    s = slots[order]
    first = np.r_[0, np.flatnonzero(s[1:] != s[:-1]) + 1] if len(s) else np.zeros(0, np.int64)
    counts = np.diff(np.r_[first, len(s)])
    ordinal = np.arange(len(s)) - np.repeat(first, counts)
    return order, ordinal
