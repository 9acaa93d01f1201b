"""The number-format study (explorer/core/precision_formats.py) and its figures: the format
table asks the chips, every format's rounding stays within its own bound, the outcomes
follow the data (overflow for FP8 on large data, flushing for MXFP4 next to outliers, none
of either for MX when only the magnitude changes), dot products stay within their bound,
and bad input is refused.

Expectations come from hand-worked values of the formats and from relations between runs,
not from the module's own arithmetic.
"""
from __future__ import annotations

import numpy as np
import pytest

import hardware_presets as hp
from explorer.core import precision_formats as pf
from explorer.plots import precision_formats as pfp
from hardware_presets.errors import InputError
from kernels.common import formats


def test_format_table_has_every_format_and_asks_each_chip():
    chip = hp.load("910B2")
    df = pf.format_table(chip).set_index("format")
    assert list(df.index) == list(formats.FORMATS)
    assert set(df.index[df["new"]]) == set(pf.NEW_FORMATS)
    assert df.loc["mxfp4", "bytes"] == 0.5 + 1 / 32 and df.loc["mxfp4", "kind"] == "block"
    assert df.loc["hif8", "kind"] == "band" and df.loc["fp8_e5m2", "layout"] == "E5M2"
    assert df.loc["mxfp8", "layout"] == "E4M3 ×32 + E8M0"
    assert df.loc["fp8_e4m3", "min_subnormal"] == 2.0 ** -9
    for name in formats.FORMATS:
        assert df.loc[name, "units"] == formats.units_with(chip, name)
        takers = {hp.load(p).display_name for p in hp.PRESETS
                  if formats.units_with(hp.load(p), name)}
        assert set(df.loc[name, "presets"]) == takers


@pytest.mark.parametrize("distribution", ["gaussian", "heavy", "outliers"])
def test_every_format_stays_within_its_bound(distribution):
    study = pf.element_study(distribution, 0, 1)
    table = study.table.set_index("format")
    assert list(table.index) == list(pf.STUDY_FORMATS)
    assert np.all(table["worst_over_bound"] <= 1.0)
    assert table["worst_over_bound"].min() > 0.5  # the bounds are not loose either
    shares = table[[f"share_{o}" for o in pf.OUTCOMES]].sum(axis=1)
    np.testing.assert_allclose(shares, 1.0)
    # the relative errors sit under each scalar format's u in the normal range
    assert table.loc["fp16", "max_rel"] <= formats.FORMATS["fp16"].unit_roundoff
    assert table.loc["fp8_e5m2", "max_rel"] <= formats.FORMATS["fp8_e5m2"].unit_roundoff


def test_outliers_flush_mxfp4_blocks_and_magnitude_does_not_matter_to_mx():
    gauss = pf.element_study("gaussian", 0, 0).table.set_index("format")
    outliers = pf.element_study("outliers", 0, 0).table.set_index("format")
    assert outliers.loc["mxfp4", "share_flushed"] > 3 * gauss.loc["mxfp4", "share_flushed"]
    big = pf.element_study("gaussian", 5, 0).table.set_index("format")  # data x 10^5
    assert big.loc["fp8_e4m3", "share_saturated"] > 0.9  # 448 is far below 10^5
    assert big.loc["hif8", "share_saturated"] > 0 and big.loc["fp8_e5m2", "share_saturated"] > 0
    assert big.loc["bf16", "share_saturated"] == 0
    for name in ("mxfp8", "mxfp4"):  # a power of ten is not a power of two, so close only
        assert big.loc[name, "share_saturated"] == 0
        assert big.loc[name, "rel_rms"] == pytest.approx(gauss.loc[name, "rel_rms"], rel=0.2)
    tiny = pf.element_study("gaussian", -6, 0).table.set_index("format")
    assert tiny.loc["fp8_e4m3", "share_flushed"] == 1.0  # everything below 2^-10
    assert tiny.loc["hif8", "share_flushed"] < 0.15  # denormals reach 2^-22 (2.4e-7)


def test_hif8_relative_error_is_tapered():
    """Near 1 HiF8 keeps 3 mantissa bits (as E4M3), far from 1 only 1 or 2."""
    study = pf.element_study("gaussian", 0, 0)
    rel = study.rel_errors["hif8"]
    assert rel.max() > formats.FORMATS["fp8_e4m3"].unit_roundoff  # the small values' bands
    assert np.median(rel) < 1.2 * np.median(study.rel_errors["fp8_e4m3"])


def test_dot_products_stay_within_their_bound():
    df = pf.dot_study("outliers", 0, 0, ks=(32, 256), trials=4)
    assert set(df["format"]) == set(pf.STUDY_FORMATS) and set(df["k"]) == {32, 256}
    assert np.all(df["rel_error"] <= df["bound"])
    by = df.set_index(["format", "k"])
    assert by.loc[("fp16", 256), "rel_error"] < by.loc[("fp8_e4m3", 256), "rel_error"]
    big = pf.dot_study("gaussian", 4, 0, formats_=("fp8_e4m3", "mxfp8"), ks=(64,), trials=2)
    by = big.set_index("format")
    assert np.isinf(by.loc["fp8_e4m3", "bound"]) and np.isfinite(by.loc["mxfp8", "bound"])


@pytest.mark.parametrize(("args", "field"), [
    (dict(formats_=("int8",)), "formats"), (dict(formats_=()), "formats"),
    (dict(distribution="cauchy"), "precision.distribution"),
    (dict(magnitude=40), "precision.magnitude"), (dict(magnitude=1.5), "precision.magnitude")])
def test_bad_input_is_refused(args, field):
    for study in (pf.element_study, pf.dot_study):
        with pytest.raises(InputError) as err:
            study(**args)
        assert err.value.field == field


def test_figures_draw_every_format_and_highlight_one():
    study = pf.element_study("outliers", 0, 0)
    fig = pfp.element_error_figure(study.rel_errors, "en", highlight="mxfp4")
    widths = {tr.meta: tr.line.width for tr in fig.data}
    assert widths["errors:mxfp4"] == 4 and widths["errors:fp16"] == 2
    assert len(fig.data) == len(pf.STUDY_FORMATS)
    bars = pfp.outcome_figure(study.table, "zh")
    assert [tr.meta for tr in bars.data] == [f"outcome:{o}" for o in pf.OUTCOMES]
    dots = pfp.dot_figure(pf.dot_study("gaussian", 5, 0, ks=(32, 64), trials=2), "en")
    bounds = {tr.meta: len(tr.x) for tr in dots.data if tr.meta.startswith("bound:")}
    assert bounds["bound:fp8_e4m3"] == 0 and bounds["bound:mxfp8"] == 2  # saturated: none
    assert pfp.element_error_figure({}, "en").layout.annotations  # the empty message
