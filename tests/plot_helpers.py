"""Shared pieces of the plot tests: hand-made timelines, chip stubs, a figure's texts."""
from __future__ import annotations

import re
import types

import pandas as pd
import plotly.graph_objects as go

COLUMNS = ["instr", "core", "core_name", "core_kind", "pipe", "op", "task", "start_ns",
           "end_ns", "bytes", "src", "dst", "served_from"]


def make_timeline(rows: list[tuple]) -> pd.DataFrame:
    """rows: (core, core_name, pipe, start_ns, end_ns[, bytes, served_from])."""
    records = []
    for i, row in enumerate(rows):
        core, name, pipe, start, end, *rest = row
        nbytes, served = (rest + [0, ""])[:2] if rest else (0, "")
        kind = re.match(r"[A-Z]+", name).group(0)
        records.append(dict(instr=i, core=core, core_name=name, core_kind=kind, pipe=pipe,
                            op=f"op{i}", task=0, start_ns=float(start), end_ns=float(end),
                            bytes=nbytes, src="GM" if nbytes else "", dst="UB" if nbytes else "",
                            served_from=served))
    return pd.DataFrame(records, columns=COLUMNS)


SMALL = make_timeline([
    (1, "AIV1", "VECTOR", 100, 300),
    (0, "AIC0", "MTE2", 0, 100, 65536, "HBM"),
    (0, "AIC0", "CUBE", 100, 400),
    (1, "AIV1", "MTE2", 0, 100, 4096, "L2"),
    (0, "AIC0", "MTE2", 100, 200, 65536, "L2"),
    (1, "AIV1", "MTE3", 300, 350, 4096, ""),
])


def chip_stub(**overrides) -> types.SimpleNamespace:
    """A 910B3-like chip with the attributes the plots read."""
    peaks = {"fp16": 294.9, "bf16": 294.9, "int8": 589.8}
    chip = dict(
        display_name="Ascend 910B3", architecture="split", ai_cores=20, vector_cores=40,
        clock_MHz=1800, l1_KiB=512, l0a_KiB=64, l0b_KiB=64, l0c_KiB=128, ub_KiB=192,
        l2_MiB=192, hbm_GiB=64, hbm_bandwidth_GBps=1600.0, l2_bandwidth_GBps=7000.0,
        mte1_l0a_bytes_per_cycle=256, mte1_l0b_bytes_per_cycle=128,
        fixpipe_gm_bytes_per_cycle=128, fixpipe_l1_bytes_per_cycle=128,
        gm_read_hbm_bytes_per_cycle=32, gm_read_l2_bytes_per_cycle=110,
        gm_write_bytes_per_cycle=64, vector_bytes_per_cycle=256, has_fixpipe=True,
        cube_precisions=tuple(peaks), peak_tflops=lambda p: peaks[p],
        vector_peak_gops=lambda dtype: 18432.0, hbm_bytes_per_ns=1600.0,
        l2_bytes_per_ns=7000.0)
    chip.update(overrides)
    return types.SimpleNamespace(**chip)


def coupled_stub() -> types.SimpleNamespace:
    peaks = {"fp16": 256.0, "int8": 512.0}
    return chip_stub(display_name="Ascend 910", architecture="coupled", ai_cores=32,
                     vector_cores=0, clock_MHz=1000, l1_KiB=1024, l0c_KiB=256, ub_KiB=256,
                     l2_MiB=32, hbm_GiB=32, has_fixpipe=False, cube_precisions=tuple(peaks),
                     peak_tflops=lambda p: peaks[p], hbm_bytes_per_ns=1200.0,
                     hbm_bandwidth_GBps=1200.0)


def all_texts(fig: go.Figure) -> str:
    """Every user-visible string of a figure: title, axes, legend names, annotations."""
    parts = [fig.layout.title.text or "", fig.layout.xaxis.title.text or "",
             fig.layout.yaxis.title.text or ""]
    parts += [trace.name or "" for trace in fig.data]
    parts += [trace.hovertemplate or "" for trace in fig.data if "hovertemplate" in trace]
    parts += [a.text or "" for a in fig.layout.annotations]
    return "\n".join(parts)
