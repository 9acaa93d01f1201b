"""The load-balance page's explanations: what each metric means (one line each), Graham's
LPT bound with the page's core count, the most an efficiency gain can cut from the
kernel's time (1 - e1/e2) for the current workload, the blog's claim (section 6: core
utilisation 65 % -> 92 %, P99 -47 %) next to what this workload gives, and how the
policies map to Ascend C (GetBlockIdx / GetBlockNum loops, a host-side LPT table, a work
queue on a GM counter, and why the blog's INTER_CORE_COMM_COST is odd).

The prose lives in the catalogues (``ui.balance.*``); here only the live numbers are
computed. The blog's figures are quoted as its claims and never used as inputs.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.core.scheduling import CYCLES_PER_TASK, CYCLES_PER_TOKEN, ceiling
from explorer.plots.balance import policy_name
from explorer.ui import state
from explorer.ui.balance_view import DEF_IDS, METRIC_IDS, METRICS
from explorer.ui.decode_controls import CHOICE_IDS
from explorer.ui.gemm_explain import literal
from hardware_presets import Chip
from kernels.common.scheduling import graham_bound

#: the blog's claim (seed section 6), quoted
BLOG_BEFORE, BLOG_AFTER, BLOG_P99_CUT, BLOG_COMM_COST = 0.65, 0.92, 0.47, 100
#: the policies in Ascend C, one paragraph each (the "comm" one quotes live numbers)
EXPLAIN_IDS = (("lpt", "ui.balance.explain.lpt"), ("queue", "ui.balance.explain.queue"),
               ("comm", "ui.balance.explain.comm"), ("cluster", "ui.balance.explain.cluster"),
               ("split", "ui.balance.explain.split"))


def show_intro(chip: Chip) -> None:
    """The page's title and what it is about, on this chip."""
    st.title(state.tr("ui.balance.title"))
    st.caption(state.tr("ui.balance.intro", chip=chip.display_name,
                        cores=len(chip.vector_core_ids())))


def show_definitions() -> None:
    """Every metric in one line."""
    with st.expander(state.tr("ui.balance.def_title")):
        st.markdown("\n".join(f"* **{state.tr(METRIC_IDS[name])}**: {state.tr(DEF_IDS[name])}"
                              for name in METRICS))


def show_workload(p: dict, tasks: int, cores: int) -> None:
    """What the tasks are and what they cost."""
    if p["source"] == "synthetic":
        st.caption(state.tr("ui.balance.synthetic_note", tasks=f"{tasks:,}", batch=p["batch"],
                            heads=p["kv_heads"], fixed=f"{CYCLES_PER_TASK:g}",
                            per_token=f"{CYCLES_PER_TOKEN:g}", cores=cores))
    else:
        st.caption(state.tr("ui.balance.decode_note", tasks=f"{tasks:,}", batch=p["batch"],
                            cores=cores, impl=state.tr(CHOICE_IDS["impl"][p["impl"]])))


def _by_policy(df: pd.DataFrame, series: str) -> pd.DataFrame:
    return df[df["series"] == series].set_index("policy")


def show_graham(df: pd.DataFrame, series: str, cores: int) -> None:
    """Graham's bound with m filled in, and where LPT lands against the lower bound."""
    lpt = _by_policy(df, series).loc["lpt"]
    st.markdown(state.tr("ui.balance.graham", m=cores, bound=f"{graham_bound(cores):.4f}",
                         ratio=f"{lpt['makespan_us'] / lpt['lower_bound_us']:.4f}"))


def _change(before: float, after: float) -> str:
    return f"{1 - after / before:.1%}" if before > 0 else "—"


def ceiling_numbers(df: pd.DataFrame, series: str) -> dict:
    """static -> LPT on this workload: both efficiencies, the ceiling 1 - e1/e2, the real
    cut of the makespan and of the P99 completion, and the best policy."""
    rows = _by_policy(df, series)
    s, lpt = rows.loc["static"], rows.loc["lpt"]
    best = rows["efficiency"].idxmax()
    return {"e1": f"{s['efficiency']:.1%}", "e2": f"{lpt['efficiency']:.1%}",
            "ceiling": f"{ceiling(s['efficiency'], lpt['efficiency']):.1%}",
            "cut": _change(s["makespan_us"], lpt["makespan_us"]),
            "p99_cut": _change(s["p99_us"], lpt["p99_us"]),
            "best": policy_name(best, state.language()),
            "best_eff": f"{rows.loc[best, 'efficiency']:.1%}",
            "best_ceiling": f"{ceiling(s['efficiency'], rows.loc[best, 'efficiency']):.1%}"}


def show_ceiling(df: pd.DataFrame, series: str) -> None:
    """The most balancing can give here, stated plainly, and the blog's claim beside it."""
    st.subheader(state.tr("ui.balance.ceiling_title"))
    n = ceiling_numbers(df, series)
    st.info(state.tr("ui.balance.ceiling", **n), icon=":material/vertical_align_top:")
    with st.expander(state.tr("ui.balance.blog.title"), expanded=True):
        st.markdown(state.tr("ui.balance.blog.claim"))
        st.markdown(state.tr(
            "ui.balance.blog.computed", before=f"{BLOG_BEFORE:.0%}", after=f"{BLOG_AFTER:.0%}",
            blog_ceiling=f"{ceiling(BLOG_BEFORE, BLOG_AFTER):.1%}", p99=f"{BLOG_P99_CUT:.0%}", **n))


def explain(mean_task_cycles: float) -> None:
    """How the policies look in Ascend C, with a code sketch and the blog's odd cost."""
    st.subheader(state.tr("ui.balance.explain.title"))
    st.markdown(state.tr("ui.balance.explain.loops"))
    with st.expander(state.tr("ui.balance.explain.code_title")):
        st.code(literal("ui.balance.explain.code"), language="cpp")
    share = f"{BLOG_COMM_COST / mean_task_cycles:.2%}" if mean_task_cycles > 0 else "—"
    values = {"comm": {"cost": BLOG_COMM_COST, "task": f"{mean_task_cycles:,.0f}",
                       "share": share}}
    for part, msg_id in EXPLAIN_IDS:
        st.markdown(state.tr(msg_id, **values.get(part, {})))
