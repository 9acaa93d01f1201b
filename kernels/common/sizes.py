"""Integer sizes in whole tiles: the two roundings every tiling needs, written once."""
from __future__ import annotations


def ceil_div(a: int, b: int) -> int:
    """Whole pieces of ``b`` that cover ``a`` (works on numpy integer arrays too)."""
    return -(-a // b)


def round_up(a: int, b: int) -> int:
    """``a`` rounded up to a multiple of ``b``."""
    return ceil_div(a, b) * b
