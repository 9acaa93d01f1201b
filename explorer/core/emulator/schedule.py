"""What an engine run returns: start, end of issue and end of every instruction, where each
GM read was served from, and the memory system's throughput over time."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SERVED_NONE, SERVED_HBM, SERVED_L2, SERVED_MULTICAST = 0, 1, 2, 3
SERVED_NAMES = ("", "HBM", "L2", "multicast")


@dataclass(frozen=True, eq=False)
class Schedule:
    """Engine output indexed by program instruction id (NaN times: never ran)."""

    start_ns: np.ndarray  # issue starts
    end_ns: np.ndarray  # done (a GM copy: its data has arrived)
    issue_end_ns: np.ndarray  # the pipe may issue again (= end_ns but for GM copies)
    served: np.ndarray  # SERVED_* per instruction
    segments: np.ndarray  # rows (t0_ns, t1_ns, hbm_bytes_per_ns, l2_bytes_per_ns)

    @classmethod
    def from_internal(cls, inp, start, end, served, segments) -> Schedule:
        """Map arrays indexed by internal id back to program ids, in one pass (the twin's
        way; the jit engine maps blocks back while its loop runs: ``map_back``)."""
        from ._jit.scatter import by_program, schedule_arrays  # (the loop imports this module)

        n = len(start)
        times, out_served = schedule_arrays(n)
        by_program(inp.order, inp.route, inp.issue_ns, start, end, np.asarray(served, np.int8),
                   times, out_served, 0, n)
        return cls(*times, out_served, np.asarray(segments, float).reshape(-1, 4))

    @property
    def unfinished(self) -> np.ndarray:
        """Program ids that never completed (a deadlock in the program's dependencies)."""
        return np.flatnonzero(np.isnan(self.end_ns))

    @property
    def makespan_ns(self) -> float:
        return float(np.nanmax(self.end_ns)) if len(self.end_ns) else 0.0
