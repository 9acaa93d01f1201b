"""Counting and grouping outcomes: how many of each kind, and one repro per distinct
failure (grouped by kind, exception type and the project line it came from), the smallest
input of its group, described in a few hundred characters."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

KINDS = ("crash", "hang", "oom", "refused", "ok")
FAILURES = ("crash", "hang", "oom")
DESCRIBE_CHARS = 400


def _short(value: object) -> str:
    """A readable, bounded description of a payload (huge texts and bytes abbreviated)."""
    if isinstance(value, (str, bytes)) and len(value) > 120:
        unit = "bytes" if isinstance(value, bytes) else "chars"
        return f"{value[:100]!r}... ({len(value):,} {unit})"
    if isinstance(value, int) and value.bit_length() > 128:
        return f"<int of {len(str(value)) if value.bit_length() < 14000 else 'many'} digits>"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_short(k)}: {_short(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_short(v) for v in value[:8]) + (", ..." if len(value) > 8 else "")
        return ("[" + inner + "]") if isinstance(value, list) else ("(" + inner + ")")
    try:
        return repr(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__}>"


def describe(case: tuple[str, object]) -> str:
    text = _short(case)
    return text if len(text) <= DESCRIBE_CHARS else text[:DESCRIBE_CHARS] + "..."


@dataclass(frozen=True)
class Group:
    kind: str
    type: str
    where: str
    count: int
    message: str
    repro: str
    index: int  # of the repro in the run's cases (``bench.fuzz --replay``)


def summarize(cases: list, outcomes: list[dict]) -> tuple[Counter, list[Group]]:
    """(count per kind, one Group per distinct failure, most frequent first)."""
    counts = Counter(o["kind"] for o in outcomes)
    groups: dict[tuple, list[int]] = {}
    for i, o in enumerate(outcomes):
        if o["kind"] in FAILURES:
            groups.setdefault((o["kind"], o["type"], o["where"]), []).append(i)
    found = []
    for (kind, type_, where), members in groups.items():
        texts = {i: describe(cases[i]) for i in members}
        smallest = min(members, key=lambda i: len(texts[i]))
        found.append(Group(kind, type_, where, len(members), outcomes[smallest]["message"],
                           texts[smallest], smallest))
    found.sort(key=lambda g: (FAILURES.index(g.kind), -g.count))
    return counts, found


def lines(counts: Counter, groups: list[Group]) -> list[str]:
    """The printed report: the counts, then each group with its repro."""
    out = [" / ".join(f"{kind} {counts.get(kind, 0)}" for kind in KINDS)]
    for g in groups:
        out.append(f"\n[{g.kind}] {g.type} at {g.where} ({g.count} cases)")
        if g.message:
            out.append(f"  message: {g.message}")
        out.append(f"  repro:   case {g.index}: {g.repro}")
    return out


def slowest(cases: list, outcomes: list[dict], count: int = 5) -> list[str]:
    """The cases that took longest (seconds from sending to answer): budget candidates."""
    order = sorted(range(len(cases)), key=lambda i: -outcomes[i].get("seconds", 0.0))
    return [f"  {outcomes[i]['seconds']:5.1f} s {outcomes[i]['kind']:<8} {describe(cases[i])[:160]}"
            for i in order[:count]]
