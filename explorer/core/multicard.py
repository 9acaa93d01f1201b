"""Multi-card decode with tensor parallelism (Megatron style) over an interconnect.

Each of N cards holds 1/N of every layer: q_heads / N query heads with their kv_heads / N
KV heads (so 1/N of the KV cache), and 1/N of the weights (column-split QKV, gate/up and
LM head, row-split O and down). One card's share is an ordinary decode scenario with a
"custom" model and ``tp = N`` (`per_card_scenario`) and is emulated like any other
decode step, every op of its layer included; the cards run in lock step, so the step of
the group is that card's step plus the communication tensor parallelism needs:

    step = layers x (one card's layer, emulated
                     + 2 all-reduces)                  after attention (O projection)
                                                       and after the MLP (down
                                                       projection), each of
                                                       batch x hidden x 2 bytes (fp16)

The all-reduce cost is the alpha-beta model of a ring all-reduce (reduce-scatter then
all-gather, 2 (N - 1) steps, each card sending 2 (N - 1) / N of the message in total):

    allreduce_ns = 2 (N - 1) alpha + 2 (N - 1) / N x nbytes / bw(N)        (0 for N = 1)

alpha is the latency of one step (``latency_us``); bw(N) is the bandwidth one card can
send with: on a full mesh (HCCS on an 8-card 910B board, one link to every other card)
all N - 1 links at once, min(per_card_GBps, (N - 1) x link_GBps); on a ring one link,
link_GBps. The per-card step is emulated; the communication is an estimate and is
labelled as one.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

import kernels
from hardware_presets.errors import InputError, Phrase
from kernels.decode.params import CUSTOM, model_of

from .decode_step import DecodeStep, simulate_decode
from .scenario import Scenario

TOPOLOGIES = ("full_mesh", "ring")
MAX_CARDS = 64
ACTIVATION_BYTES = 2  # fp16 / bf16 activations are all-reduced
ALLREDUCES_PER_LAYER = 2  # after attention (O projection) and after the MLP (down proj.)
_HCCS_PRESS = ("Huawei Atlas 800T A2 / Ascend 910B press material: HCCS 56 GB/s per card "
               "pair, 392 GB/s per card (7 links) on an 8-card board")


@dataclass(frozen=True)
class Interconnect:
    """A card-to-card network for the all-reduce; every number with its provenance
    (field, "status: source"), status one of published / derived / estimated / override."""

    link_GBps: float  # per direction, one card-pair link
    per_card_GBps: float  # per direction, all of one card's links together
    latency_us: float  # alpha: latency of one all-reduce step (a ring all-reduce has 2 (N-1))
    topology: str  # "full_mesh" or "ring"
    provenance: tuple[tuple[str, str], ...] = ()

    def source(self, field: str) -> str:
        """The provenance text of one field ("" if none is recorded)."""
        return dict(self.provenance).get(field, "")

    def status(self, field: str) -> str:
        """published / derived / estimated / override, the word before the first colon."""
        return self.source(field).split(":", 1)[0]


HCCS = Interconnect(
    link_GBps=56.0, per_card_GBps=392.0, latency_us=1.5, topology="full_mesh",
    provenance=(
        ("link_GBps", f"published: {_HCCS_PRESS} (press, low confidence)"),
        ("per_card_GBps", f"published: {_HCCS_PRESS}; = 7 x 56 GB/s"),
        ("latency_us", "estimated: no vendor figure; small-message all-reduce on 8 devices "
                       "takes ~10-30 us in public HCCL/NCCL benchmarks, 1.5 us per step x "
                       "14 steps = 21 us"),
        ("topology", "published: 8 x 910B on one Atlas 800T A2 board, HCCS full mesh"),
    ))

#: The measured alternative: a third-party 8-card all-reduce benchmark reports ~72 GB/s
#: algorithm bandwidth for large messages, i.e. a bus bandwidth of 72 x 2 x 7 / 8 = 126
#: GB/s per card; as a ring whose link is that bus bandwidth it reproduces the benchmark.
HCCS_MEASURED = Interconnect(
    link_GBps=126.0, per_card_GBps=126.0, latency_us=1.5, topology="ring",
    provenance=(
        ("link_GBps", "derived: third-party 8-card all-reduce benchmark, ~72 GB/s algorithm "
                      "bandwidth = 126 GB/s bus bandwidth (x 2 (N-1) / N)"),
        ("per_card_GBps", "derived: as link_GBps (a ring uses one link per direction)"),
        ("latency_us", HCCS.source("latency_us")),
        ("topology", "derived: the benchmark's figure expressed as a ring"),
    ))
INTERCONNECTS = {"hccs": HCCS, "hccs_measured": HCCS_MEASURED}


def make_interconnect(link_GBps: float, per_card_GBps: float, latency_us: float,
                      topology: str, base: Interconnect = HCCS) -> Interconnect:
    """An interconnect from user numbers, validated; a number that differs from ``base``
    gets provenance "override: user input"."""
    for name, value in (("link_GBps", link_GBps), ("per_card_GBps", per_card_GBps)):
        if not isinstance(value, (int, float)) or not 0 < value <= 1e6:
            raise InputError(f"interconnect.{name}", value, Phrase("refusal.multicard.bandwidth"))
    if not isinstance(latency_us, (int, float)) or not 0 <= latency_us <= 1e5:
        raise InputError("interconnect.latency_us", latency_us,
                         Phrase("refusal.multicard.latency"))
    if topology not in TOPOLOGIES:
        raise InputError("interconnect.topology", topology,
                         Phrase("refusal.one_of", options=", ".join(TOPOLOGIES)))
    new = {"link_GBps": float(link_GBps), "per_card_GBps": float(per_card_GBps),
           "latency_us": float(latency_us), "topology": topology}
    prov = tuple((k, base.source(k) if getattr(base, k) == v else "override: user input")
                 for k, v in new.items())
    return Interconnect(**new, provenance=prov)


def bw_per_card(ic: Interconnect, cards: int) -> float:
    """GB/s (= bytes/ns) one card sends with during an all-reduce over ``cards`` cards."""
    if ic.topology == "full_mesh":
        return min(ic.per_card_GBps, (cards - 1) * ic.link_GBps)
    return ic.link_GBps


def allreduce_ns(nbytes: float, cards: int, ic: Interconnect) -> float:
    """Ring all-reduce of ``nbytes`` over ``cards`` cards, alpha-beta (module docstring):
    2 (N-1) alpha + 2 (N-1) / N x nbytes / bw(N); 0 for one card."""
    if cards <= 1:
        return 0.0
    alpha_ns = ic.latency_us * 1e3
    return 2 * (cards - 1) * alpha_ns + 2 * (cards - 1) / cards * nbytes / bw_per_card(ic, cards)


# ---- one card's share --------------------------------------------------------------------
def _check_cards(scenario: Scenario, cards: object) -> None:
    if "decode_step" not in kernels.get(scenario.kernel).extensions:
        raise InputError("kernel", scenario.kernel, Phrase(
            "refusal.multicard.kernel", kernels=", ".join(
                k for k, r in kernels.KERNELS.items() if "decode_step" in r.extensions)))
    if not isinstance(cards, int) or isinstance(cards, bool) or not 1 <= cards <= MAX_CARDS:
        raise InputError("cards", cards, Phrase("refusal.multicard.cards", n=MAX_CARDS))


def _divisors(n: int, limit: int = MAX_CARDS) -> str:
    return ", ".join(str(d) for d in range(1, min(n, limit) + 1) if n % d == 0)


def per_card_shape(scenario: Scenario, cards: int) -> dict[str, int | float]:
    """The custom_* parameters of one card's share: heads, hidden, the MLP width and
    parameters / N (the vocabulary, RoPE base and epsilon whole: the layer divides the LM
    head by ``tp``)."""
    _check_cards(scenario, cards)
    m = model_of(scenario.params_dict)
    for field, value in (("kv_heads", m.kv_heads), ("q_heads", m.q_heads),
                         ("hidden", m.hidden), ("intermediate_size", m.intermediate_size)):
        if value % cards:
            raise InputError("cards", cards, Phrase(
                "refusal.multicard.divisor", field=field, value=value, model=m.display_name,
                divisors=_divisors(value), what=field),
                hint=Phrase("refusal.hint.cards", divisors=_divisors(m.kv_heads)))
    return {"layers": m.layers, "q_heads": m.q_heads // cards, "kv_heads": m.kv_heads // cards,
            "head_dim": m.head_dim, "hidden": m.hidden // cards,
            "params_B": m.params_B / cards, "intermediate_size": m.intermediate_size // cards,
            "vocab_size": m.vocab_size, "rope_theta": m.rope_theta,
            "rms_norm_eps": m.rms_norm_eps}


def per_card_scenario(scenario: Scenario, cards: int) -> Scenario:
    """One card's share as a decode scenario (model "custom" with q_heads / N, kv_heads / N,
    hidden / N, params_B / N; ``allow_overcommit`` so it runs, `MultiCardStep.fits` says
    whether it fits). heads_per_pass and split_tokens go back to auto (0): the per-card
    kernel picks them for its own share of heads. One card is the scenario itself."""
    shape = per_card_shape(scenario, cards)
    if cards == 1:
        return scenario.replace(params={"allow_overcommit": True})
    params = {f"custom_{k}": v for k, v in shape.items()}
    params.update(model=CUSTOM, allow_overcommit=True, heads_per_pass=0, split_tokens=0,
                  tp=cards)
    return scenario.replace(params=params)


# ---- the group's step --------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class MultiCardStep:
    """A decode step on ``cards`` cards: one card's emulated share plus the all-reduces."""

    cards: int
    per_card: DecodeStep  # one card's share (its model is the per-card shape)
    interconnect: Interconnect
    allreduce_bytes: float  # one all-reduce's message: batch x hidden x 2
    allreduce_ns_per_layer: float  # ALLREDUCES_PER_LAYER all-reduces, ESTIMATED
    notes: tuple[tuple[str, dict], ...]

    @property
    def layers(self) -> int:
        return self.per_card.layers

    @property
    def batch(self) -> int:
        return len(self.per_card.lengths)

    @property
    def step_ns(self) -> float:
        return self.per_card.step_ns + self.layers * self.allreduce_ns_per_layer

    @property
    def tokens_per_s(self) -> float:
        """Tokens the whole batch produces per second (one per sequence per step)."""
        return self.batch / self.step_ns * 1e9 if self.step_ns > 0 else 0.0

    @property
    def per_token_latency_ms(self) -> float:
        """Time between two tokens of one sequence: one step (every sequence is in it)."""
        return self.step_ns / 1e6

    @property
    def fits(self) -> bool:
        """weights / N + KV / N within one card's HBM."""
        return self.per_card.fits_hbm

    @property
    def roofline_ns(self) -> float:
        """The memory roofline of the step: one card's weights and KV (batch_bytes) read
        once at its HBM bandwidth, plus the all-reduces; no step can be shorter."""
        share = self.per_card
        nbytes = share.fit["weight_bytes"] + share.kv["batch_bytes"]
        return nbytes / share.hbm_peak_GBps + self.layers * self.allreduce_ns_per_layer


def simulate_multicard(scenario: Scenario, cards: int, ic: Interconnect = HCCS, *,
                       decode: Callable[[Scenario], DecodeStep] = simulate_decode
                       ) -> MultiCardStep:
    """The decode step of ``scenario`` split over ``cards`` cards (module docstring).
    ``decode``: how to get a DecodeStep (the page passes its cached one)."""
    share = decode(per_card_scenario(scenario, cards))
    hidden = model_of(scenario.params_dict).hidden
    nbytes = float(len(share.lengths) * hidden * ACTIVATION_BYTES)
    per_layer = ALLREDUCES_PER_LAYER * allreduce_ns(nbytes, cards, ic)
    notes = [("note.multicard_split", {"cards": cards}),
             ("note.multicard_allreduce", {"count": ALLREDUCES_PER_LAYER,
                                           "bytes": f"{nbytes:,.0f}", "cards": cards})]
    if not share.fits_hbm:
        need = (share.kv["reserved_bytes"] + share.fit["weight_bytes"]) / 2 ** 30  # GiB
        notes.append(("note.multicard_overcommit",
                      {"cards": cards, "need_GiB": f"{need:,.2f}",
                       "hbm_GiB": f"{share.fit['hbm_bytes'] / 2 ** 30:,.2f}"}))
    return MultiCardStep(cards, share, ic, nbytes, per_layer, tuple(notes))


def valid_cards(scenario: Scenario, cards: Sequence[int]) -> list[int]:
    """The card counts of ``cards`` that split the model into whole heads."""
    m = model_of(scenario.params_dict)
    return [n for n in cards if not (m.kv_heads % n or m.q_heads % n or m.hidden % n)]


def _row(s: MultiCardStep, base_ns: float) -> dict:
    speedup = base_ns / s.step_ns if s.step_ns > 0 else 0.0
    ms = s.layers / 1e6
    return {"N": s.cards, "step_ms": s.step_ns / 1e6, "tokens_per_s": s.tokens_per_s,
            "per_token_latency_ms": s.per_token_latency_ms, "speedup": speedup,
            "efficiency": speedup / s.cards, "fits": s.fits,
            "append_ms": s.per_card.append_ns * ms, "attention_ms": s.per_card.attention_ns * ms,
            "linear_ms": s.per_card.linear_ns * ms, "allreduce_ms": s.allreduce_ns_per_layer * ms}


def scaling(scenario: Scenario, cards: Sequence[int] = (1, 2, 4, 8), ic: Interconnect = HCCS,
            *, decode: Callable[[Scenario], DecodeStep] = simulate_decode) -> pd.DataFrame:
    """One row per card count that splits the model into whole heads (others are left
    out): N, step_ms, tokens_per_s, per_token_latency_ms, speedup (step on one card /
    step on N), efficiency (speedup / N), fits, and the step's split (append, attention,
    linear estimate, all-reduce; ms per step)."""
    ns = sorted(set(valid_cards(scenario, cards)))
    steps = [simulate_multicard(scenario, n, ic, decode=decode) for n in ns]
    base = steps[0].step_ns if ns and ns[0] == 1 else \
        simulate_multicard(scenario, 1, ic, decode=decode).step_ns
    return pd.DataFrame([_row(s, base) for s in steps],
                        columns=["N", "step_ms", "tokens_per_s", "per_token_latency_ms",
                                 "speedup", "efficiency", "fits", "append_ms",
                                 "attention_ms", "linear_ms", "allreduce_ms"])


def littles_law_batch(tokens_per_s: float, latency_ms: float) -> float:
    """Sequences in flight that a throughput and a per-token latency imply together
    (Little's law: L = lambda x W, tokens/s x s per token)."""
    return tokens_per_s * latency_ms / 1e3


#: Claim 11 of the blog (section 7.1): 8 x 910B, Llama 3 70B, 8K context,
#: tokens/s and P99 per-token latency (ms) before -> after its optimisations.
CLAIM_11 = {"cards": 8, "model": "llama3-70b", "context": 8192,
            "before": (1200.0, 45.0), "after": (3850.0, 15.0)}


def claim11_scenario(preset: str = "910B2", impl: str = "split_kv",
                     overrides: dict | None = None) -> Scenario:
    """The blog's claim-11 setting with the batch its "after" numbers imply (Little's law)."""
    batch = max(1, round(littles_law_batch(*CLAIM_11["after"])))
    ctx = CLAIM_11["context"]
    return Scenario.make(preset, "decode", {"model": CLAIM_11["model"], "batch": batch,
                                            "mean_len": ctx, "max_len": ctx, "impl": impl,
                                            "allow_overcommit": True}, overrides)


__all__ = ["CLAIM_11", "claim11_scenario", "HCCS", "HCCS_MEASURED", "INTERCONNECTS",
           "Interconnect", "MultiCardStep",
           "allreduce_ns", "bw_per_card", "littles_law_batch", "make_interconnect",
           "per_card_scenario", "per_card_shape", "scaling", "simulate_multicard",
           "valid_cards"]
