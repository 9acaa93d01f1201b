"""Controls and views of the "Multi-card decode" page (explorer/ui/pages/multicard.py).

Controls: the workload (model, batch, context, attention implementation), the card
count, and the interconnect (a sourced preset whose numbers can be edited; an edited
number's provenance becomes "override"). Views: the step on the chosen card count, the
scaling curve and the step split over N = 1..8, and the blog's claims 11 and 12 next to
what the model gives. One card's decode step is cached as a resource on its scenario, so
moving the card slider or editing the interconnect never re-emulates a share.
"""
from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from explorer.core import Scenario
from explorer.core import multicard as mc
from explorer.core.decode_step import DecodeStep, simulate_decode
from explorer.core.i18n import t
from explorer.plots import multicard as plots
from explorer.plots import values
from explorer.ui import errors, run_view, state, widgets
from hardware_presets.errors import InputError
from kernels.common.params import ParamSpec
from kernels.decode.params import model_of
from kernels.models import list_models, load_model

PREFIX = "mc."
LABELS = "ui.mc.param"
ALL_CARDS = tuple(range(1, 9))
SPECS = {s.name: s for s in (
    ParamSpec("model", str, "llama3-70b", choices=list_models()),
    ParamSpec("batch", int, 8, 1, 256, log_scale=True),
    ParamSpec("mean_len", int, 8192, 256, 32768, log_scale=True),
    ParamSpec("impl", str, "split_kv", choices=("vector", "split_kv", "cube_vector")),
    ParamSpec("cards", int, 8, 1, 8),
    ParamSpec("interconnect", str, "hccs", choices=tuple(mc.INTERCONNECTS)),
    ParamSpec("link_GBps", float, mc.HCCS.link_GBps, 0.001, 1e6),
    ParamSpec("per_card_GBps", float, mc.HCCS.per_card_GBps, 0.001, 1e6),
    ParamSpec("latency_us", float, mc.HCCS.latency_us, 0.0, 1e5),
    ParamSpec("topology", str, mc.HCCS.topology, choices=mc.TOPOLOGIES),
)}
IC_FIELDS = ("link_GBps", "per_card_GBps", "latency_us", "topology")
#: message ids: each interconnect preset and topology, and the scaling table's columns
INTERCONNECT_IDS = {"hccs": "ui.mc.ic.hccs", "hccs_measured": "ui.mc.ic.hccs_measured"}
TOPOLOGY_IDS = {"full_mesh": "ui.mc.topology.full_mesh", "ring": "ui.mc.topology.ring"}
COLUMN_IDS = {
    "N": "ui.mc.col.N", "step_ms": "ui.mc.col.step_ms", "tokens_per_s": "ui.mc.col.tokens_per_s",
    "per_token_latency_ms": "ui.mc.col.per_token_latency_ms", "speedup": "ui.mc.col.speedup",
    "efficiency": "ui.mc.col.efficiency", "fits": "ui.mc.col.fits",
    "append_ms": "ui.mc.col.append_ms", "attention_ms": "ui.mc.col.attention_ms",
    "linear_ms": "ui.mc.col.linear_ms", "allreduce_ms": "ui.mc.col.allreduce_ms",
}
#: the unit each column of the scaling table is written in (its heading names the ms)
COLUMN_UNITS = {"N": values.COUNT, "tokens_per_s": values.NUMBER,
                "speedup": values.TIMES, "efficiency": "", "fits": values.FLAG,
                **dict.fromkeys(("step_ms", "per_token_latency_ms", "append_ms", "attention_ms",
                                 "linear_ms", "allreduce_ms"), values.NUMBER)}
#: the word of each provenance status
STATUS_IDS = {"published": "ui.status.published", "derived": "ui.status.derived",
              "estimated": "ui.status.estimated", "override": "ui.status.override"}
#: (interconnect preset, field) -> message id of its source in words, translated as the chip
#: presets' notes are (explorer/core/multicard.py keeps the English with the numbers)
SOURCE_IDS = {
    ("hccs", "link_GBps"): "ui.mc.source.hccs.link_GBps",
    ("hccs", "per_card_GBps"): "ui.mc.source.hccs.per_card_GBps",
    ("hccs", "latency_us"): "ui.mc.source.latency_us",
    ("hccs", "topology"): "ui.mc.source.hccs.topology",
    ("hccs_measured", "link_GBps"): "ui.mc.source.hccs_measured.link_GBps",
    ("hccs_measured", "per_card_GBps"): "ui.mc.source.hccs_measured.per_card_GBps",
    ("hccs_measured", "latency_us"): "ui.mc.source.latency_us",
    ("hccs_measured", "topology"): "ui.mc.source.hccs_measured.topology",
}


@st.cache_resource(max_entries=24, show_spinner=False, hash_funcs={Scenario: state.scenario_key})
def decode_step(scenario: Scenario) -> DecodeStep:
    """One card's share, emulated once per scenario."""
    return simulate_decode(scenario)


def key(name: str) -> str:
    return PREFIX + name


def value(name: str) -> object:
    return st.session_state.get(key(name), SPECS[name].default)


def take_url() -> list:
    return widgets.take_url_into(SPECS, key)


# ---- controls ----------------------------------------------------------------------------
def choice_names(lang: str) -> dict[str, Callable[[str], str]]:
    """How the model and attention-kernel widgets name their choices (the language bound
    now: AppTest calls format functions outside the script run). The decode page's names
    are imported here, not above: that page imports this one."""
    from explorer.ui.decode_controls import CHOICE_IDS

    return {"model": lambda m: load_model(m).display_name,
            "impl": lambda i: t(CHOICE_IDS["impl"][i], lang),
            "topology": lambda k: t(TOPOLOGY_IDS[k], lang)}


def controls() -> dict:
    """The workload widgets; returns the decode parameters and the card count."""
    cols, names = st.columns(5), choice_names(state.language())
    for col, name in zip(cols, ("model", "batch", "mean_len", "impl", "cards")):
        widgets.param_widget(SPECS[name], key(name), where=col, prefix=LABELS,
                             format_func=names.get(name, str))
    ctx = int(value("mean_len"))
    params = {"model": value("model"), "batch": int(value("batch")), "mean_len": ctx,
              "max_len": max(ctx, 8192), "impl": value("impl"), "allow_overcommit": True}
    return {"params": params, "cards": int(value("cards"))}


def _load_preset() -> None:
    """Copy the chosen preset's numbers into the editable fields."""
    ic = mc.INTERCONNECTS[st.session_state[f"w.{key('interconnect')}"]]
    st.session_state[key("interconnect")] = st.session_state[f"w.{key('interconnect')}"]
    for name in IC_FIELDS:
        st.session_state[key(name)] = getattr(ic, name)


def _number(where, name: str) -> None:
    spec = SPECS[name]
    where.number_input(widgets.param_label(spec, LABELS), min_value=float(spec.min),
                       max_value=float(spec.max), format="%g",
                       help=widgets.param_help(spec, prefix=LABELS),
                       **state.bound(key(name), float(value(name))))


def interconnect() -> mc.Interconnect | None:
    """The interconnect widgets and their provenance; None after showing a refusal."""
    with st.expander(state.tr("ui.mc.ic_title"), expanded=False):
        st.radio(widgets.param_label(SPECS["interconnect"], LABELS), list(mc.INTERCONNECTS),
                 format_func=lambda k: state.tr(INTERCONNECT_IDS[k]), horizontal=True,
                 help=widgets.param_help(SPECS["interconnect"], prefix=LABELS),
                 **{**state.bound(key("interconnect"), value("interconnect")),
                    "on_change": _load_preset, "args": ()})
        cols = st.columns(4)
        for col, name in zip(cols, IC_FIELDS[:3]):
            _number(col, name)
        widgets.param_widget(SPECS["topology"], key("topology"), where=cols[3], prefix=LABELS,
                             format_func=choice_names(state.language())["topology"])
        try:
            ic = mc.make_interconnect(*(value(n) for n in IC_FIELDS),
                                      base=mc.INTERCONNECTS[value("interconnect")])
        except InputError as exc:
            errors.show(exc, state.language())
            return None
        table = _provenance(ic)
        st.dataframe(table, hide_index=True, width="stretch", **run_view.wrapped(table))
    return ic


def source_text(ic: mc.Interconnect, name: str) -> str:
    """Where one interconnect number comes from, in the session's language: the preset's
    source translated (SOURCE_IDS), "user input" for an edited number."""
    if ic.status(name) == "override":
        return state.tr("ui.mc.source.override")
    preset = next((key for key, known in mc.INTERCONNECTS.items()
                   if known.source(name) == ic.source(name)), None)
    msg_id = SOURCE_IDS.get((preset, name))
    return state.tr(msg_id) if msg_id else ic.source(name).split(": ", 1)[-1]


def _provenance(ic: mc.Interconnect) -> pd.DataFrame:
    """Each interconnect number by its label, in its label's unit, with its provenance."""
    topology = choice_names(state.language())["topology"]
    rows = [{state.tr("ui.mc.col.field"): widgets.param_label(SPECS[name], LABELS),
             state.tr("ui.mc.col.value"): topology(ic.topology) if name == "topology" else
             run_view.metric_value(name, getattr(ic, name), values.NUMBER),
             state.tr("ui.mc.col.status"): state.tr(STATUS_IDS[ic.status(name)]),
             state.tr("ui.mc.col.source"): source_text(ic, name)}
            for name in IC_FIELDS]
    return pd.DataFrame(rows)


# ---- views -------------------------------------------------------------------------------
def _notes(notes) -> None:
    for msg_id, note_values in notes:
        st.caption(state.tr(msg_id, **note_values))


def show_step(s: mc.MultiCardStep) -> None:
    """The step on the chosen card count: time, tokens/s, latency, all-reduce, fit."""
    st.subheader(state.tr("ui.mc.step_title", cards=s.cards))
    cols = st.columns(5)
    cols[0].metric(state.tr("ui.mc.m.step"), f"{s.step_ns / 1e6:,.2f} ms")
    cols[1].metric(state.tr("ui.mc.m.tokens"), f"{s.tokens_per_s:,.0f}")
    cols[2].metric(state.tr("ui.mc.m.latency"), f"{s.per_token_latency_ms:,.2f} ms")
    cols[3].metric(state.tr("ui.mc.m.allreduce"),
                   f"{s.layers * s.allreduce_ns_per_layer / 1e6:,.2f} ms",
                   help=state.tr("ui.mc.m.allreduce_help"))
    cols[4].metric(state.tr("ui.mc.m.fits"),
                   state.tr("ui.mc.yes") if s.fits else state.tr("ui.mc.no"),
                   help=state.tr("ui.mc.m.fits_help"))
    _notes(s.notes)


def scaling_table(scenario: Scenario, ic: mc.Interconnect) -> pd.DataFrame:
    return mc.scaling(scenario, ALL_CARDS, ic, decode=decode_step)


def show_scaling(table: pd.DataFrame, scenario: Scenario) -> None:
    """The scaling curve, the split per N and the table."""
    st.subheader(state.tr("ui.mc.scaling_title"))
    skipped = sorted(set(ALL_CARDS) - set(table["N"]))
    if skipped:
        st.caption(state.tr("ui.mc.skipped", cards=", ".join(map(str, skipped)),
                            kv=model_of(scenario.params_dict).kv_heads))
    lang = state.language()
    st.plotly_chart(plots.scaling_figure(table, lang), config=state.CHART_CONFIG)
    st.plotly_chart(plots.split_figure(table, lang), config=state.CHART_CONFIG)
    st.caption(state.tr("ui.mc.split_help"))
    st.dataframe(scaling_display(table), hide_index=True, width="stretch")


def scaling_display(table: pd.DataFrame) -> pd.DataFrame:
    """The scaling table as text: each column in its unit (times in the ms its heading
    names), headed in the session's language."""
    shown = pd.DataFrame({c: [run_view.metric_value(c, v, COLUMN_UNITS[c]) for v in table[c]]
                          for c in table.columns})
    return shown.rename(columns={c: state.tr(COLUMN_IDS[c]) for c in table.columns})


def show_claims(table: pd.DataFrame, ic: mc.Interconnect, impl: str) -> None:
    """Claims 11 and 12 of the blog against the model, computed now."""
    st.subheader(state.tr("ui.mc.claims_title"))
    c = mc.CLAIM_11
    (t0, l0), (t1, l1) = c["before"], c["after"]
    scenario = mc.claim11_scenario(state.preset(), impl, state.overrides())
    s = mc.simulate_multicard(scenario, c["cards"], ic, decode=decode_step)
    roof_tps = s.batch / s.roofline_ns * 1e9
    st.markdown(state.tr(
        "ui.mc.claim11", t0=f"{t0:,.0f}", t1=f"{t1:,.0f}", l0=f"{l0:g}", l1=f"{l1:g}",
        b0=f"{mc.littles_law_batch(t0, l0):.1f}", b1=f"{mc.littles_law_batch(t1, l1):.1f}",
        batch=s.batch, chip=state.chip().display_name, tps=f"{s.tokens_per_s:,.0f}",
        lat=f"{s.per_token_latency_ms:.1f}", roof_tps=f"{roof_tps:,.0f}",
        roof_lat=f"{s.roofline_ns / 1e6:.1f}",
        fits=state.tr("ui.mc.yes") if s.fits else state.tr("ui.mc.no")))
    verdict = "ui.mc.claim11_above" if t1 > roof_tps else "ui.mc.claim11_within"
    st.markdown(state.tr(verdict, t1=f"{t1:,.0f}"))
    if not table.empty:
        last = table.iloc[-1]
        st.markdown(state.tr("ui.mc.claim12", n=int(last["N"]), speedup=f"{last['speedup']:.2f}",
                             eff=f"{last['efficiency']:.0%}",
                             ar=f"{last['allreduce_ms'] / last['step_ms']:.0%}"))
