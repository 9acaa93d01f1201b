"""The inputs of the "KV cache and decode" page under AppTest (issue 19): switching the
lengths to an explicit list keeps the results, every model of the list opens into a
configuration that runs (one that does not fit a chip is split over cards, and the list
says so before it is picked), one quantity reads the same wherever the page writes it, in
one unit convention, the widgets offer only values the page runs, and a linked block_dim
is refused with the chip's range, led by the field's label.
"""
from __future__ import annotations

import re

import hardware_presets as hp
from explorer.core import Scenario
from explorer.core.multicard import per_card_shape
from explorer.plots.style import format_bytes
from explorer.ui import decode_controls
from explorer.ui.decode_explain import BLOG_KV_GB
from kernels.decode import params as dp
from kernels.decode.kv_memory import max_batch_that_fits
from kernels.models import load_model, model_from_dict
from tests.apptest_helpers import open_page, set_and_apply, texts
from tests.apptest_helpers import widget as find

PAGE = "explorer/ui/pages/decode.py"
PREFIX = "w.dc."
KV_TILE = "KV of the batch (reserved)"
#: a memory size as the page writes it: a number and a byte unit (not a rate: GB/s)
SIZE = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s?(KiB|MiB|GiB|TiB|KB|MB|GB|TB)(?![\w/])")
UNIT_BYTES = {"KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40,
              "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
DECIMAL = ("KB", "MB", "GB", "TB")


def decode_page(query: dict | None = None, **values):
    """The decode page with ``values`` set and applied."""
    at = open_page(PAGE, query)
    return set_and_apply(at, PREFIX, **values) if values else at


def widget(at, name: str):
    return find(at, PREFIX + name)


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def chip(at) -> hp.Chip:
    return hp.load(at.session_state["preset"])


def option_value(label: str) -> int:
    """The number a slider option shows ("4,096 (2^12)" -> 4096)."""
    return int(label.split()[0].replace(",", ""))


def auto_cards(at) -> int:
    """The cards "auto" stands for on the page ("auto (4)" -> 4)."""
    return int(re.search(r"\d+", widget(at, "cards").options[0]).group())


def page_text(at) -> str:
    """Every text the page shows: tiles, captions, boxes and markdown."""
    tiles = "\n".join(f"{m.label} {m.value}" for m in at.metric)
    boxes = (at.caption, at.markdown, at.info, at.warning, at.error, at.success)
    return "\n".join([tiles, *(texts(b) for b in boxes)])


def sizes(text: str) -> list[tuple[str, float]]:
    """(the size as written, its bytes) of every memory size in ``text``."""
    return [(f"{number} {unit}", float(number.replace(",", "")) * UNIT_BYTES[unit])
            for number, unit in SIZE.findall(text)]


def runs_cleanly(at) -> bool:
    return not at.exception and not at.error and "Passed" in texts(at.success)


# ---- 4: an explicit list starts from the lengths shown -----------------------------------
def test_switching_to_an_explicit_list_keeps_the_lengths_and_the_results():
    at = decode_page(distribution="lognormal")
    shown = metric(at, KV_TILE)
    set_and_apply(at, PREFIX, distribution="list")
    assert runs_cleanly(at)
    lengths = at.text_input(key=PREFIX + "lengths").value
    assert len(lengths.split(",")) == widget(at, "batch").value
    assert metric(at, KV_TILE) == shown  # the same batch: the lognormal draw, as a list


# ---- 5: every model opens into a configuration that runs ---------------------------------
def test_every_model_opens_without_an_error_split_over_cards_when_too_big():
    at = decode_page()
    labels = dict(zip(decode_controls.SPECS["model"].choices, widget(at, "model").options))
    hbm = chip(at).hbm_bytes
    for name in decode_controls.SPECS["model"].choices:
        if name == dp.CUSTOM:
            continue
        set_and_apply(at, PREFIX, model=name)
        assert runs_cleanly(at), (name, texts(at.error))
        model = load_model(name)
        if max_batch_that_fits(model, chip(at), 1)["weights_fit"]:
            assert labels[name] == model.display_name
            continue
        cards = auto_cards(at)
        assert str(cards) in labels[name]  # the list said so before it was picked
        assert model.kv_heads % cards == 0 and model.weight_bytes("fp16") / cards <= hbm
        note = texts(at.info)
        assert f"split over {cards} cards" in note and f"one card of {cards}" in note


# ---- 5: one quantity, one number, one unit -----------------------------------------------
def assert_written_alike(quantities: dict[str, int], shown: list[tuple[str, float]]) -> None:
    """Each quantity appears, and every size near it (within 3 %: the same bytes in other
    units or roundings) is written exactly as ``format_bytes`` writes it."""
    assert {format_bytes(q) for q in quantities.values()} <= {text for text, _ in shown}
    for what, expected in quantities.items():
        for text, value in shown:
            if abs(value - expected) <= 0.03 * expected:
                assert text == format_bytes(expected), (what, text)


def test_every_memory_size_of_one_quantity_reads_the_same():
    at = decode_page(model="llama3-70b")
    model, shown = load_model("llama3-70b"), sizes(page_text(at))
    assert_written_alike({"weights": model.weight_bytes("fp16"), "HBM": chip(at).hbm_bytes,
                          "KV per 8K sequence": model.kv_bytes_per_token("fp16") * 8192},
                         shown)
    decimal = [text for text, _ in shown if text.split()[1] in DECIMAL]
    assert set(decimal) <= {f"{BLOG_KV_GB} GB"}  # only the blog's own figure, quoted
    whole = Scenario.make(at.session_state["preset"], "decode", {"model": "llama3-70b"})
    share = model_from_dict(per_card_shape(whole, auto_cards(at)))  # what one card holds
    assert_written_alike({"card's weights": share.weight_bytes("fp16"),
                          "card's KV per token": share.kv_bytes_per_token("fp16")}, shown)


# ---- 6: the widgets offer only what the page runs ----------------------------------------
def test_mean_len_never_offers_more_than_max_len():
    at = decode_page()
    top = option_value(widget(at, "mean_len").options[-1])
    assert top <= widget(at, "max_len").value


def test_mean_len_and_batch_at_their_largest_offer_run():
    at = decode_page()
    set_and_apply(at, PREFIX, mean_len=option_value(widget(at, "mean_len").options[-1]))
    assert runs_cleanly(at)
    set_and_apply(at, PREFIX, batch=option_value(widget(at, "batch").options[-1]))
    assert runs_cleanly(at)


# ---- 7: block_dim in the chip's range, refusals led by the label -------------------------
def test_block_dim_follows_the_chips_vector_cores():
    at = decode_page({"block_dim": "0"})
    cores = len(chip(at).vector_core_ids())
    assert runs_cleanly(at) and f"block_dim = {cores} of the {cores} vector cores" in \
        texts(at.caption)
    for linked in (cores + 1, 300):
        linked_page = decode_page({"block_dim": str(linked)})
        refusal = texts(linked_page.error) + texts(linked_page.warning)
        assert refusal.startswith(f"block_dim (0 = all cores) (params.block_dim) = {linked}")
        assert f"0 (all) to {cores} (vector cores of" in refusal and "256" not in refusal
        assert "Passed" in texts(linked_page.success)
