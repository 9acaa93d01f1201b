"""Cases of the multi-core reduction: ``out[0] = sum(x)`` in fp32 over every core.

x is drawn from [0, 1) (a sum without cancellation, so a relative tolerance means
something). Any order of fp32 additions (per-lane tile sums, ReduceSum's tree, the
partials) is accepted: the rounding errors of n additions behave as a random walk, so
the relative error of the sum stays within a few u sqrt(n) (u: fp32's unit roundoff);
the tolerance is 4 u sqrt(n). Dropping even one 32-byte block (8 elements, about 4 of the
sum) is far outside it for these sizes.
"""
from __future__ import annotations

import math

import numpy as np

from kernels.ascendc.puzzles import Case
from kernels.common.formats import FORMATS

U = FORMATS["fp32"].unit_roundoff
ALIGN = 8  # fp32 elements per 32-byte block: every slice starts on a block


def block_length(total: int, block_dim: int) -> int:
    """The host's blockLength: an equal share of the cores, rounded up to whole blocks."""
    share = -(-total // block_dim)
    return -(-share // ALIGN) * ALIGN


def make_case(name: str, total: int, block_dim: int, tile: int, rng) -> Case:
    block = block_length(total, block_dim)
    assert total % ALIGN == 0 and total - (block_dim - 1) * block > 0
    x = rng.random(total, dtype=np.float64).astype(np.float32)
    exact = float(np.sum(x.astype(np.float64)))
    out = np.zeros(ALIGN, np.float64)
    out[0] = exact
    return Case(
        name=name,
        args={"x": x, "work": np.zeros(ALIGN * block_dim, np.float32),
              "out": np.zeros(ALIGN, np.float32)},
        tiling={"totalLength": total, "blockLength": block, "tileLength": tile},
        block_dim=block_dim,
        outputs=("out",),
        expected={"out": out},
        rtol=4.0 * U * math.sqrt(total),
        atol=0.0,
    )


def cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    out = []
    for name, block_dim, tile in (("eight_cores", 8, 1024), ("twenty_cores", 20, 512),
                                  ("all_cores", 48, 256)):
        while True:  # every core's slice ends in a partial tile of at least 64 elements
            per_core = int(rng.integers(2 * tile, 5 * tile))  # a few tiles and a part
            total = block_dim * per_core // ALIGN * ALIGN
            block = block_length(total, block_dim)
            last = total - (block_dim - 1) * block
            if block % tile >= 64 and last > 0 and last % tile >= 64:
                break
        out.append(make_case(name, total, block_dim, tile, rng))
    return out


def timing_case() -> Case:
    return make_case("timing", 48 * 20_000 + 1_000, 48, 4096, np.random.default_rng(7))
