"""The translation layer and its catalogues (explorer/core/locales/<lang>/*.toml).

Every id exists in every language with the same {placeholders}; no message is empty; a
Chinese message is not an untranslated copy of the English prose (identical text is fine
for short labels and technical names such as "MTE2 / UB"); and ``t`` fills, refuses and
fails the way pages rely on.
"""
from __future__ import annotations

import re
import string

import pytest

from explorer.core import i18n
from explorer.core.i18n import LANGUAGES, catalogue, t

SHORT = 12  # identical en/zh text of at most this many characters is a label, not prose


def placeholders(text: str) -> set[str]:
    """Names of the {placeholders} of a message (raises ValueError on a stray brace)."""
    return {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}


def is_prose(text: str) -> bool:
    """English prose: two or more plain lowercase words once `code`, {placeholders} and HTML
    tags are removed. Units and names ("flop/byte", "TFLOPS", "DataCopy") are not words."""
    bare = re.sub(r"`[^`]*`|\{[^{}]*\}|<[^<>]*>", " ", text)
    words = (token.strip(".,:;!?()[]\"'") for token in bare.split())
    return sum(bool(re.fullmatch(r"[a-z]{3,}", word)) for word in words) >= 2


def test_both_languages_have_the_same_ids():
    en, zh = set(catalogue("en")), set(catalogue("zh"))
    assert en, "the en catalogue is empty"
    assert not en - zh, f"ids missing in zh: {sorted(en - zh)}"
    assert not zh - en, f"ids missing in en: {sorted(zh - en)}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_messages_are_well_formed(lang):
    problems = []
    for msg_id, text in catalogue(lang).items():
        if not text.strip():
            problems.append(f"{msg_id}: empty")
            continue
        try:
            names = placeholders(text)
        except ValueError as exc:
            problems.append(f"{msg_id}: {exc} in {text!r}")
            continue
        bad = sorted(n for n in names if not n.isidentifier())
        if bad:
            problems.append(f"{msg_id}: placeholders must be {{name}}, found {bad}")
    assert not problems, f"{lang}:\n" + "\n".join(problems)


def test_placeholders_match_across_languages():
    en, zh = catalogue("en"), catalogue("zh")
    problems = [
        f"{msg_id}: en {sorted(placeholders(en[msg_id]))} != zh {sorted(placeholders(zh[msg_id]))}"
        for msg_id in sorted(en.keys() & zh.keys())
        if placeholders(en[msg_id]) != placeholders(zh[msg_id])
    ]
    assert not problems, "\n".join(problems)


def test_chinese_is_not_a_copy_of_english_prose():
    en, zh = catalogue("en"), catalogue("zh")
    copies = [
        f"{msg_id}: {zh[msg_id]!r}"
        for msg_id in sorted(en.keys() & zh.keys())
        if zh[msg_id] == en[msg_id] and len(en[msg_id]) > SHORT and is_prose(en[msg_id])
    ]
    assert not copies, "untranslated in zh:\n" + "\n".join(copies)


@pytest.mark.parametrize(
    ("text", "prose"),
    [
        ("MTE2 / MTE3 / FIXPIPE", False),
        ("Use `DataCopy(dst, src, len)`", False),
        ("{field} = {value}", False),
        ("<b>{label}</b><br>{intensity} flop/byte<br>{tflops} TFLOPS", False),
        ("Download the scenario file", True),
        ("Busy time per pipe, in cycles.", True),
    ],
)
def test_prose_heuristic(text, prose):
    assert is_prose(text) is prose


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_message_formats(lang):
    for msg_id, text in catalogue(lang).items():
        values = {name: f"<{name}>" for name in placeholders(text)}
        out = t(msg_id, lang, **values)
        assert all(v in out for v in values.values()), (msg_id, out)


def test_t_fills_placeholders():
    values = dict(field="cores", value=0, allowed="1..32")
    assert t("error.invalid_input", "en", **values) == "cores = 0 is not allowed: 1..32"
    zh = t("error.invalid_input", "zh", **values)
    assert "cores" in zh and "0" in zh and "1..32" in zh and "{" not in zh
    assert "MTE2" in t("error.hint", "zh", hint="MTE2")


def test_common_strings():
    assert t("app.title", "en") == "Ascend NPU architecture explorer"
    assert t("app.title", "zh") == "昇腾 NPU 架构探索器"
    assert (t("nav.chip", "en"), t("nav.chip", "zh")) == ("Chip", "芯片")
    assert t("nav.vector_add", "zh") == "向量加法实验台"
    assert (t("estimate.label", "en"), t("estimate.label", "zh")) == ("estimate", "估计值")
    for msg_id in ("app.title", "sidebar.language", "sidebar.chip", "download.scenario",
                   "download.trace", "download.csv"):
        assert all(i18n.has(msg_id, lang) for lang in LANGUAGES), msg_id


@pytest.mark.parametrize("lang", LANGUAGES)
def test_unknown_id_raises_key_error(lang):
    with pytest.raises(KeyError):
        t("no.such.message", lang)
    assert not i18n.has("no.such.message", lang)


def test_unknown_language_is_refused():
    with pytest.raises(ValueError, match="fr"):
        catalogue("fr")
    with pytest.raises(ValueError):
        t("app.title", "fr")
