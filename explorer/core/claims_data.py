"""What the Claims page stands on: the card record, the blog's own figures, its sentences.

A `Card` is one quantitative claim of the seed blog next to what this explorer computes
for the chip in use. Its `Figure`s say where each number comes from: ``blog`` (the claim
itself, quoted), ``preset`` (the chip file), ``model`` (a model shape or a formula over
presets and models), ``emulated`` (the emulator) or ``estimate`` (a labelled model such as
the all-reduce cost). Only ``blog`` numbers are written down here; everything else is
computed in `claims` from the chip it is given.

Verdicts follow one explicit rule per card (message ``claims.c<N>.rule``):
``holds``, ``wrong`` (the chip or a computation contradicts it), ``inconsistent`` (the
claim's own figures contradict each other) or ``unverifiable`` (nothing here can measure
it, and the card says why).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

VERDICTS = ("holds", "wrong", "inconsistent", "unverifiable")
SOURCES = ("blog", "preset", "model", "emulated", "estimate")
#: message ids naming each verdict and each source (literal, so tests can check them)
VERDICT_IDS = {"holds": "claims.verdict.holds", "wrong": "claims.verdict.wrong",
               "inconsistent": "claims.verdict.inconsistent",
               "unverifiable": "claims.verdict.unverifiable"}
SOURCE_IDS = {"blog": "claims.source.blog", "preset": "claims.source.preset",
              "model": "claims.source.model", "emulated": "claims.source.emulated",
              "estimate": "claims.source.estimate"}
GB = 1e9

# ---- the blog's figures (seed sections in brackets) -------------------------------------
BLOG = {
    "int8_tops_per_core": 256.0,            # 1.1
    "ub_TBps": 4.0, "ub_ratio_lo": 8.0, "ub_ratio_hi": 10.0,  # 1.1
    "tops_per_w_per_mm2": 3.2,              # 1.1
    "kv_GB": 48.7, "kv_ratio": 1.8, "context": 8192,  # 3.1
    "cluster_cut_lo": 0.40, "cluster_cut_hi": 0.60, "neighbour_ns": 10.0,  # 2.2
    "compute_cut": 0.40, "ub_hit_before": 0.45, "ub_hit_after": 0.78,  # 3.3
    "overlap_before": 0.60, "overlap_after": 0.92,
    "sparse_speedup": 1.8,                  # 4.1
    "util_before": 0.65, "util_after": 0.92, "p99_cut": 0.47,  # 6.1
    "tps_before": 1200.0, "tps_after": 3850.0, "p99_before_ms": 45.0,  # 7.1
    "p99_after_ms": 15.0, "cards": 8,
}
BLOG_MODEL = "llama3-70b"

#: the seed's own sentences, verbatim (tests check each is in the seed file)
QUOTES = {
    1: "Cube Unit峰值算力：在INT8精度下，单AI Core可达256 TOPS",
    2: "内存带宽层级：UB（Unified Buffer）带宽达4 TB/s，是Global Memory的8-10倍",
    3: "计算密度：每mm²硅片面积提供3.2 TOPS/W 的能效比",
    4: "以Llama 3 70B模型为例，8K上下文长度下，KV Cache占用达48.7GB，是模型权重的1.8倍。",
    5: "减少Global Memory访问：Cluster内数据共享可降低40-60% 的片外访存 / "
       "优化核间通信：物理相邻的核间延迟<10ns，远低于跨Die通信",
    6: "计算量减少：增量更新避免重复计算，计算量降低40% / 访存优化：UB缓存命中率从45%提升至78% / "
       "流水线效率：计算-DMA重叠率从60%提升至92%",
    7: "在FP16精度下，2:4稀疏可带来1.8倍 的实际加速，而不仅仅是理论上的2倍。",
    8: "内存占用：从22.3GB降至15.2GB（降低31.8%） / 精度保持：在LongBench评测中，精度损失<0.5%",
    9: "// Kahan求和算法补偿累加误差",
    10: "核利用率：从平均65%提升至92% / 尾延迟：P99延迟降低47%",
    11: "吞吐量：1,200 tokens/s / P99延迟：45ms / P99延迟：15ms（降低67%）",
    12: "关键洞察：Ascend C的3D Task模型在多卡扩展中表现出近乎线性的扩展效率，"
        "这得益于精细的核间通信控制和负载均衡算法。",
}
SECTIONS = {1: "1.1", 2: "1.1", 3: "1.1", 4: "3.1", 5: "2.2", 6: "3.3", 7: "4.1", 8: "4.2",
            9: "5", 10: "6.1", 11: "7.1", 12: "9.2"}

_PERF = "Ascend C API appendix: cube/vector instruction theoretical performance summary"
REFERENCES = {
    1: (_PERF + " (cube m x n x k per precision)",
        "Hot Chips 31 (2019), Huawei DaVinci talk: Ascend 910, 256 TFLOPS fp16 per chip"),
    2: (_PERF + " (256 B per repeat)", "CANN kernel headers: L2 : HBM bandwidth 5 : 1",
        "No vendor UB bandwidth figure is published"),
    3: ("Press: Ascend 910B ~400 W, die ~666 mm²",
        "US BIS export rule (Oct 2023): performance density = TPP / die area; "
        "thresholds 1.6 / 3.2 / 5.92"),
    4: ("Meta Llama 3 70B config.json (80 layers, 8 KV heads, head_dim 128)",),
    5: ("Ascend C programming guide: 910B cores exchange data through GM/L2, no cluster",
        "Luo et al., Benchmarking and Dissecting the Nvidia Hopper GPU Architecture "
        "(SM-to-SM ~180 cycles)"),
    6: ("Ascend torchair Llama guide: fixed KV cache + scatter update instead of cat",
        "Ascend C programming guide: TQue, BUFFER_NUM = 2 (double buffering)"),
    7: ("Ascend C API: MmadWithSparse (int8 4:2, 910B only)",
        "PyTorch semi-structured sparsity tutorial / torchao: A100 1.24-1.38x on GEMMs"),
    8: ("Devoto et al. 2024, arXiv 2406.11430",
        "H2O, StreamingLLM, SnapKV, Quest, PyramidKV"),
    9: ("Higham, Accuracy and Stability of Numerical Algorithms, ch. 4 (summation)",),
    10: ("Graham 1969, Bounds on multiprocessing timing anomalies (LPT 4/3 - 1/(3m))",),
    11: ("Huawei press: HCCS 56 GB/s per card pair, 392 GB/s per card",
         "Third-party 8-card all-reduce benchmark: ~72 GB/s algorithm bandwidth",
         "MindFormers: Llama 3.1 70B ~509 tokens/s on Atlas 800T A2"),
    12: ("Huawei press: HCCS 56 GB/s per card pair, 392 GB/s per card",
         "Third-party 8-card all-reduce benchmark: ~72 GB/s algorithm bandwidth"),
}


@dataclass(frozen=True)
class Figure:
    """One number of a card: its message id suffix (``claims.fig.<name>``), value, how to
    print it (a format spec, or "yesno"), and where it comes from (one of SOURCES)."""

    name: str
    value: float | bool
    fmt: str
    source: str

    @property
    def label_id(self) -> str:
        """Message id of the figure's label (one per figure name, like a chip field's)."""
        return f"claims.fig.{self.name}"


@dataclass(frozen=True)
class Card:
    """One claim with its computed figures, verdict, references and demonstrating link."""

    id: int
    section: str
    quote: str
    figures: tuple[Figure, ...]
    verdict: str
    references: tuple[str, ...]
    page: str  # url path of the page that demonstrates it ("" = the chip page)
    params: tuple[tuple[str, object], ...] = field(default=())

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"card {self.id}: verdict {self.verdict!r} not in {VERDICTS}")
        bad = [f.name for f in self.figures if f.source not in SOURCES]
        if bad:
            raise ValueError(f"card {self.id}: figures with an unknown source: {bad}")

    @property
    def rule_id(self) -> str:
        return f"claims.c{self.id}.rule"

    @property
    def explain_id(self) -> str:
        return f"claims.c{self.id}.explain"

    @property
    def claim_id(self) -> str:
        return f"claims.c{self.id}.claim"

    def figure(self, name: str) -> float | bool:
        """The value of one figure by name (KeyError if the card has none)."""
        for f in self.figures:
            if f.name == name:
                return f.value
        raise KeyError(f"card {self.id} has no figure {name!r}")

    def values(self) -> dict[str, float | bool]:
        return {f.name: f.value for f in self.figures}

    def link(self, **extra: object) -> str:
        """The demonstrating page's relative URL with its query (preset and overrides in,
        then ``extra`` such as lang): opened, it starts a session on that scenario."""
        pairs = list(self.params) + list(extra.items())
        query = urlencode([(k, _url_text(v)) for k, v in pairs])
        return f"./{self.page}?{query}" if query else f"./{self.page}"


def _url_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def chip_params(chip) -> list[tuple[str, object]]:
    """URL parameters that reopen a page on ``chip``: its preset and its overrides."""
    return [("preset", chip.name)] + [(f"chip.{k}", v) for k, v in
                                      sorted(chip.overridden.items())]


def format_value(f: Figure, lang: str = "en") -> str:
    """A figure as the card prints it (yes/no translated, numbers by their format spec)."""
    from .i18n import t

    if f.fmt == "yesno":
        return t("claims.yes" if f.value else "claims.no", lang)
    return format(f.value, f.fmt)


def text_values(card: Card, lang: str = "en") -> dict[str, str]:
    """{figure name: printed value}: the placeholders of the card's rule and explanation."""
    return {f.name: format_value(f, lang) for f in card.figures}


def counts(cards) -> dict[str, int]:
    """How many cards have each verdict, in VERDICTS order."""
    return {v: sum(c.verdict == v for c in cards) for v in VERDICTS}
