"""Controls of the "KV cache and decode" page, generated from ``kernels.decode.params.PARAMS``.

Three groups, as a serving engineer meets them: the workload (model or a custom shape,
batch, context lengths, KV and weight precisions, the cards the model is split over), the
cache (layout, block size, how the new token is appended) and the kernel (attention
implementation, cores, BUFFER_NUM, task policy, tile and head grouping, split-KV chunk).

The page starts small (Llama 3 8B, 8 sequences of 2K tokens) so it answers in a blink.
Widgets offer only values the page runs: before they are drawn, ``fit`` asks the page's
own checks (``Runs``: the kernel's check, HBM, the emulation size, on what the page
emulates) for the largest batch, mean_len and max_len with the other settings as they
are; the chip and the kernel give block_dim's and heads_per_pass's ranges. A value the
page would refuse (from a link, or after another setting or the chip changed) moves into
its range with an error box that shows the refusal, led by the field's label, as every
page shows a refusal. The rarely changed widgets of each group are folded under "More
options"; the page draws them all in its apply fragment (``explorer.ui.apply``).
A model whose weights do not fit one chip is split over the fewest cards that hold it
(``cards``, tensor parallelism as the multi-card page splits it), and the model list says
so before it is picked. Choosing "explicit list" fills the list with the lengths the page
just showed. What the kernel still refuses (a typed list of the wrong size, a tile too big
for UB) is shown as a translated error by the page (``errors.show`` with ``label_id``).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import streamlit as st

import hardware_presets as hp
from explorer.core.i18n import t
from explorer.ui import errors, state, widgets
from explorer.ui.decode_cards import card_counts, emulated, fewest_cards, whole_model
from explorer.ui.gemm_controls import labels
from explorer.ui.multicard_view import ALL_CARDS
from explorer.ui.page_params import PageParams, Taken
from hardware_presets import Chip
from hardware_presets.errors import InputError
from kernels.common.params import ParamSpec
from kernels.decode import params as dp
from kernels.decode import workload as wl
from kernels.decode.kv_formats import check_kv_format, kv_formats_on, presets_holding
from kernels.models import load_model

#: the page's own parameter: cards the model is split over (the kernel's ``tp`` is the share
#: it runs, which the page derives from this); 0 = the fewest whose weight share fits
CARDS_SPEC = ParamSpec("cards", int, 0, 0, max(ALL_CARDS), unit="cards (0 = auto)")
SPECS = {spec.name: spec for spec in (*dp.PARAMS, CARDS_SPEC, widgets.SEED_SPEC)}
PAGE_PHASES = ("layer", "both", "append", "attention")  # compression: the sparse page
PREFIX = "dc."  # session keys of this page's values: dc.batch, dc.impl, ...
LABELS = "ui.decode.param"  # <LABELS>.<name>.label / .help
#: the page's own starting point: small enough to emulate in about a second
UI_DEFAULTS = {"model": "llama3-8b", "batch": 8, "mean_len": 2048, "max_len": 8192}
#: the catalogue id of every choice of the choice parameters, by parameter (ids written out,
#: see tests/test_message_ids.py); the load-balance and sparse pages name theirs from here
CHOICE_IDS = {
    "distribution": {"equal": "ui.decode.distribution.equal",
                     "uniform": "ui.decode.distribution.uniform",
                     "lognormal": "ui.decode.distribution.lognormal",
                     "bimodal": "ui.decode.distribution.bimodal",
                     "list": "ui.decode.distribution.list"},
    "layout": {"contiguous": "ui.decode.layout.contiguous", "paged": "ui.decode.layout.paged"},
    "allocation": {"shuffled": "ui.decode.allocation.shuffled",
                   "interleaved": "ui.decode.allocation.interleaved"},
    "append": {"incremental": "ui.decode.append.incremental",
               "concat": "ui.decode.append.concat"},
    "phases": {"layer": "ui.decode.phases.layer", "both": "ui.decode.phases.both",
               "append": "ui.decode.phases.append", "attention": "ui.decode.phases.attention"},
    "impl": {"vector": "ui.decode.impl.vector", "cube_vector": "ui.decode.impl.cube_vector",
             "split_kv": "ui.decode.impl.split_kv"},
    "policy": {"static": "ui.decode.policy.static", "round_robin": "ui.decode.policy.round_robin",
               "lpt": "ui.decode.policy.lpt", "cluster_lpt": "ui.decode.policy.cluster_lpt",
               "dynamic": "ui.decode.policy.dynamic"},
}

#: one-click scenarios; each starts from the page defaults
EXAMPLES = {
    "small": {},
    "ragged": {"distribution": "bimodal", "mean_len": 1024, "policy": "round_robin"},
    "concat": {"append": "concat"},
    "cube": {"impl": "cube_vector"},
    "split": {"impl": "split_kv", "batch": 2, "mean_len": 8192},
    "paged_int8": {"kv_dtype": "int8_token", "block_size": 64},
}


PAGE = PageParams(PREFIX, SPECS, UI_DEFAULTS, EXAMPLES)
key, value = PAGE.key, PAGE.value
#: the label of each parameter, for ``errors.show`` ("Batch (params.batch)")
label_id = errors.param_labels(SPECS, LABELS)
#: the parameters the page draws, in the order of its widgets (the others keep the kernel's
#: defaults: the sparse policy is the sparse page's)
PAGE_NAMES = ("model", *(f"custom_{n}" for n in dp.CUSTOM_FIELDS), "batch", "distribution",
              "mean_len", "lengths", "max_len", "kv_dtype", "weight_dtype", "cards", "layout",
              "block_size", "allocation", "append", "phases", "allow_overcommit", "impl",
              "block_dim", "buffer_num", "policy", "inter_core_cost", "tile_tokens",
              "heads_per_pass", "split_tokens", "seed")
#: the log-scale parameters whose range the page's own checks decide, in the order fitted
FITTED = ("batch", "mean_len", "max_len")
#: session key of the distribution the lengths were last drawn from (the list starts there)
DRAWN_FROM = "dc_drawn_from"
#: the page's checks of kernel parameters and a seed: InputError when it would not run them
Runs = Callable[[dict, int], None]
#: a value brought into its range: the parameter, the refusal it met, the value used
Notice = tuple[str, InputError, object]


def default(name: str) -> object:
    return UI_DEFAULTS.get(name, SPECS[name].default)


def current() -> dict:
    """The page's parameters as the session holds them (the widgets mirror these values)."""
    return {name: value(name) for name in PAGE_NAMES}


# ---- URL and examples --------------------------------------------------------------------
def url_params(p: dict) -> dict:
    """The parameters that describe the scenario (unused ones are left out of links)."""
    skip = set()
    if p["model"] != dp.CUSTOM:
        skip |= {f"custom_{name}" for name in dp.CUSTOM_FIELDS}
    if p["distribution"] != "list":
        skip.add("lengths")
    if p["layout"] != "paged":
        skip |= {"block_size", "allocation"}
    if p["impl"] != "split_kv":
        skip.add("split_tokens")
    if p["policy"] not in ("lpt", "cluster_lpt"):
        skip.add("inter_core_cost")
    return {k: v for k, v in p.items() if k not in skip}


def examples() -> None:
    """A row of buttons, each one a ready scenario."""
    PAGE.example_row("ui.decode.example", "dc_example")


# ---- what the page accepts: values brought into range, and the widgets' ranges ----------
def _drawn_lengths() -> str:
    """The lengths the page showed, as a list: drawn from the distribution before "explicit
    list" (the same seed), "" when they cannot be drawn (the page says why)."""
    p = current()
    drawn = {**p, "distribution": st.session_state.get(DRAWN_FROM, default("distribution"))}
    try:
        lengths = wl.lengths_from_params(wl.BatchParams.of(drawn),
                                         np.random.default_rng(p["seed"]))
    except InputError:
        return ""
    return ", ".join(str(n) for n in lengths)


def _prefill_lengths() -> None:
    """Keep the distribution the lengths are drawn from; choosing "explicit list" while the
    list is empty fills it with the lengths the page showed, so the switch keeps the
    results instead of refusing an empty list. A list typed is never replaced."""
    if value("distribution") != "list":
        st.session_state[DRAWN_FROM] = value("distribution")
    elif not str(value("lengths")).strip():
        st.session_state[key("lengths")] = _drawn_lengths()


class _Fit:
    """The session's page parameters brought into what the page runs (``runs`` on what it
    emulates), and the ranges the widgets offer. A value moves only when the page refuses
    it, and then with a notice: the refusal it met and the value used instead."""

    def __init__(self, chip: Chip, runs: Runs) -> None:
        self.chip, self.runs, self.p = chip, runs, current()
        self.notices: list[Notice] = []

    def refusal(self, **changes) -> InputError | None:
        """What the page would refuse with ``changes`` to its parameters (None: it runs)."""
        p = {**self.p, **changes}
        try:
            self.runs(emulated(self.chip, p), p["seed"])
        except InputError as exc:
            return exc
        return None

    def move(self, name: str, exc: InputError, used: object) -> None:
        self.notices.append((name, exc, used))
        self.p[name] = st.session_state[key(name)] = used

    def bound(self, name: str, hi: int | None) -> int | None:
        """The widget's maximum for ``name`` from the largest value that runs (``hi``, None
        when unknown); the value moves down to it only if the page refuses the one it has."""
        if hi is None or self.p[name] <= hi:
            return hi
        exc = self.refusal()
        if exc is None:
            return self.p[name]
        self.move(name, exc, hi)
        return hi

    def kv_dtype(self) -> None:
        """A KV format this chip's units do not take (a link, or another chip) goes back
        to fp16, with the refusal."""
        try:
            check_kv_format(self.chip, self.p["kv_dtype"])
        except InputError as exc:
            self.move("kv_dtype", exc, "fp16")

    def cards(self) -> None:
        """A card count that no longer splits the model into shares that fit (another
        model, precision or chip) goes back to auto."""
        counts, cards = card_counts(self.chip, self.p), self.p["cards"]
        if cards and counts and cards not in counts:
            exc = InputError("params.cards", cards, state.tr(
                "ui.decode.cards.refusal", counts=", ".join(map(str, counts)),
                model=whole_model(self.p).display_name, dtype=self.p["weight_dtype"],
                chip=self.chip.display_name))
            self.move("cards", exc, 0)

    def heads(self) -> int | None:
        """The most KV heads per pass the kernel takes (what its auto resolves to), None
        while it refuses the parameters for another reason."""
        try:
            run = emulated(self.chip, {**self.p, "heads_per_pass": 0})
            return int(dp.check(self.chip, run)["heads_per_pass"])
        except InputError:
            return None

    def floor(self, name: str) -> int:
        """The smallest value offered: max_len starts at mean_len (or the longest listed
        length), never above the value it has."""
        spec, p = SPECS[name], self.p
        lo = int(p["mean_len"]) if name == "max_len" else int(spec.min)
        if name == "max_len" and p["distribution"] == "list":
            try:
                lo = max(wl.parse_lengths(p["lengths"]))
            except InputError:
                lo = int(spec.min)
        return max(int(spec.min), min(lo, int(p[name]), int(spec.max)))

    def largest(self, name: str) -> int | None:
        """The largest value a log-scale widget offers (powers of two and the value held)
        with which the page runs, by bisection (its checks refuse from some size on); None
        when even the smallest does not run: something else is wrong, the page says what."""
        values = widgets.powers_of_two(self.floor(name), SPECS[name].max, keep=self.p[name])
        if not values or self.refusal(**{name: values[0]}) is not None:
            return None
        lo, hi = 0, len(values) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if self.refusal(**{name: values[mid]}) is None else (lo, mid - 1)
        return values[lo]

    def lengths(self) -> dict:
        """The largest batch, mean_len and max_len (mean_len and batch follow a typed list);
        a value moved changes the others' ranges, so they are fitted again until none moves."""
        limits: dict = {}
        for _ in range(len(FITTED)):
            moved = len(self.notices)
            for name in FITTED:
                listed = self.p["distribution"] == "list" and name != "max_len"
                limits[name] = None if listed else self.bound(name, self.largest(name))
            if len(self.notices) == moved:
                break
        return limits


def fit(chip: Chip, runs: Runs) -> tuple[dict, list[Notice]]:
    """The widgets' ranges, each value brought into its range first (cards, block_dim up to
    the chip's vector cores, heads_per_pass up to what UB holds, then the largest batch,
    mean_len and max_len that ``runs`` accepts), and the notices of the values moved."""
    f = _Fit(chip, runs)
    f.kv_dtype()
    f.cards()
    limits = {"block_dim": f.bound("block_dim", dp.block_dim_limit(chip)),
              "heads_per_pass": f.bound("heads_per_pass", f.heads()), **f.lengths()}
    limits["max_len_floor"] = f.floor("max_len")
    return limits, f.notices


def show_notices(notices: list[Notice]) -> None:
    """Each value the page moved, shown as every page shows a refusal (an error box): the
    refusal it met, led by the field's label, and the value the page runs with instead."""
    lang = state.language()
    for name, exc, used in notices:
        shown = state.tr("ui.decode.cards.auto", cards=fewest_cards(state.chip(), current())) \
            if name == "cards" else used if isinstance(used, str) else f"{used:,}"
        st.error(errors.message(exc, lang, label_id=label_id) + "\n\n" + state.tr(
            "ui.decode.fit.moved", label=widgets.param_label(SPECS[name], LABELS),
            value=shown), icon=":material/error:")


def take_url(chip: Chip) -> Taken:
    """Copy the URL's parameters into session state; what was taken, and the refused ones,
    block_dim's naming this chip's range (not the parameter's 0 to 256)."""
    taken = PAGE.take()
    return Taken(taken.names, tuple(dp.block_dim_refusal(chip, exc) for exc in taken.refused))


# ---- widgets -----------------------------------------------------------------------------
def _model_labels(chip: Chip) -> Callable[[str], str]:
    """Each model's name, with the cards it needs when its weights do not fit one chip."""
    lang, p, names = state.language(), current(), {}
    for name in SPECS["model"].choices:
        if name == dp.CUSTOM:
            names[name] = t("ui.decode.custom_model", lang)
            continue
        display, cards = load_model(name).display_name, fewest_cards(chip, {**p, "model": name})
        names[name] = t("ui.decode.cards.model", lang, model=display, cards=cards) \
            if cards > 1 else display
    return names.__getitem__


def _kv_dtype(chip: Chip, where) -> None:
    """The KV formats this chip takes (``kv_formats_on``), and a caption naming the ones
    it does not and the presets that do."""
    offered = kv_formats_on(chip)
    _widget("kv_dtype", where, replace(SPECS["kv_dtype"], choices=offered))
    absent = tuple(k for k in SPECS["kv_dtype"].choices if k not in offered)
    if absent:
        chips = [hp.load(n).display_name for n in presets_holding(absent)]
        where.caption(state.tr("ui.decode.kv_formats.absent", chip=chip.display_name,
                               formats=", ".join(absent), chips=", ".join(chips)))


def _cards(chip: Chip, where) -> None:
    """The cards the model is split over: auto, or a count that splits it into shares that
    fit (any count that splits it when overcommit is allowed)."""
    auto = state.tr("ui.decode.cards.auto", cards=fewest_cards(chip, current()))
    options = sorted({0, *card_counts(chip, current()), int(value("cards"))})
    _widget("cards", where, options=options, format_func=lambda n: auto if n == 0 else str(n))


def _widget(name: str, where, spec: ParamSpec | None = None, **kwargs):
    st.session_state.setdefault(key(name), default(name))
    return widgets.param_widget(spec or SPECS[name], key(name), where=where, prefix=LABELS,
                                **kwargs)


def _choice(name: str, where, choices: tuple | None = None):
    """A choice widget; ``choices`` narrows the parameter's own (the page's subset)."""
    spec = replace(SPECS[name], choices=choices) if choices else None
    return _widget(name, where, spec, format_func=labels(CHOICE_IDS[name]))


def _number(name: str, where, **kwargs):
    """A plain number input (floats, or integers whose slider would be too long) over the
    parameter's range."""
    spec = SPECS[name]
    return where.number_input(
        widgets.param_label(spec, LABELS), min_value=spec.kind(spec.min),
        max_value=spec.kind(spec.max), help=widgets.param_help(spec, prefix=LABELS),
        **kwargs, **state.bound(key(name), value(name)))


def _custom_shape(where) -> None:
    """The custom model's shape fields (only when the model is "custom")."""
    with where.expander(state.tr("ui.decode.custom_title"), expanded=True):
        for name in dp.CUSTOM_FIELDS:
            field = f"custom_{name}"
            if name in ("params_B", "hidden"):
                _number(field, st, format="%g")
            else:
                _widget(field, st)


def _lengths(limits: dict, where) -> None:
    """Mean and max length (max_len from mean_len up), or the explicit list of lengths."""
    if value("distribution") == "list":
        spec = SPECS["lengths"]
        where.text_input(
            widgets.param_label(spec, LABELS), help=widgets.param_help(spec, prefix=LABELS),
            placeholder="2048, 512, 8192", **state.bound(key("lengths"), value("lengths")))
    else:
        _widget("mean_len", where, max_value=limits["mean_len"])
    spec = replace(SPECS["max_len"], min=limits["max_len_floor"])
    _widget("max_len", where, spec, max_value=limits["max_len"])


def _more(where):
    """The rarely changed widgets of a group, folded under "More options"."""
    return where.expander(state.tr("apply.more"))


def _workload(chip: Chip, limits: dict, where) -> None:
    """Model, batch, context lengths, KV precision; the weights' precision and the cards
    folded."""
    where.markdown(f"**{state.tr('ui.decode.group.workload')}**")
    _widget("model", where, format_func=_model_labels(chip))
    if value("model") == dp.CUSTOM:
        _custom_shape(where)
    _widget("batch", where, max_value=limits["batch"])
    _choice("distribution", where)
    _lengths(limits, where)
    _kv_dtype(chip, where)
    with _more(where):
        _widget("weight_dtype", st)
        _cards(chip, st)


def _cache(where) -> None:
    """Layout (and its blocks) and append strategy; the phases run and overcommit folded."""
    where.markdown(f"**{state.tr('ui.decode.group.cache')}**")
    _choice("layout", where)
    if value("layout") == "paged":
        _widget("block_size", where)
        _choice("allocation", where)
    _choice("append", where)
    with _more(where):
        _choice("phases", st, PAGE_PHASES)
        _widget("allow_overcommit", st)


def _kernel(chip: Chip, limits: dict, where) -> None:
    """Implementation, cores, BUFFER_NUM; the policy, tile, heads per pass, split chunk
    and the seed folded."""
    where.markdown(f"**{state.tr('ui.decode.group.kernel')}**")
    _choice("impl", where)
    _widget("block_dim", where, max_value=limits["block_dim"],
            extra_help=state.tr("ui.decode.block_dim_max", cores=dp.block_dim_limit(chip),
                                cube=chip.ai_cores, chip=chip.display_name))
    _widget("buffer_num", where)
    with _more(where):
        _choice("policy", st)
        if value("policy") in ("lpt", "cluster_lpt"):
            _number("inter_core_cost", st, step=50.0)
        _number("tile_tokens", st, step=16)
        _widget("heads_per_pass", st, max_value=limits["heads_per_pass"] or _kv_heads())
        if value("impl") == "split_kv":
            _number("split_tokens", st, step=256)
        _number("seed", st, step=1)


def _kv_heads() -> int:
    """heads_per_pass's range while the kernel refuses the parameters for another reason:
    the chosen model's KV heads, and at least the value held (the page says what is wrong)."""
    heads = value("custom_kv_heads") if value("model") == dp.CUSTOM else \
        load_model(value("model")).kv_heads
    return max(int(heads), int(value("heads_per_pass")))


def controls(chip: Chip, runs: Runs) -> tuple[dict, list[Notice]]:
    """Draw every parameter widget in three bordered columns (the rarely changed ones of
    each folded under "More options"), each value first brought into the range the page
    runs (``fit``, ``runs`` being the page's checks); returns the page's parameters (the
    seed, key "seed", draws the lengths and the block table) and the notices of the values
    moved."""
    _prefill_lengths()
    limits, notices = fit(chip, runs)
    left, middle, right = (column.container(border=True) for column in st.columns(3))
    _workload(chip, limits, left)
    _cache(middle)
    _kernel(chip, limits, right)
    return current(), notices
