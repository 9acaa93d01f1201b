"""How deeply a TOML or JSON text nests, measured without parsing it.

The standard parsers recurse once per level (``RecursionError`` on ``[[[[...``) and a
dotted key of thousands of parts makes ``tomllib`` build a tower of tables for half a
minute before running out of memory. One linear pass over the text, skipping strings and
comments, counts the levels first so that :mod:`hardware_presets.documents` refuses such a
text before any parser sees it. Both scanners stop as soon as ``limit`` is exceeded; text
they do not understand (an unterminated string) is left to the parser, which stops there
with its own syntax error before going deeper.
"""
from __future__ import annotations

import re

#: the characters that change the nesting state, outside strings
_TOML_SPECIAL = re.compile(r"""[\[\]{}"'#=.,\n]""")
_JSON_SPECIAL = re.compile(r'[\[\]{}"]')
#: the rest of a string after its opening quote(s), written so that every character has
#: one way to match (linear time, no backtracking)
_STRING_END = {
    '"""': re.compile(r'[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""(?:""?)?', re.DOTALL),
    "'''": re.compile(r"[^']*(?:'(?!'')[^']*)*'''(?:''?)?"),
    '"': re.compile(r'[^"\\\n]*(?:\\.[^"\\\n]*)*"'),
    "'": re.compile(r"[^'\n]*'"),
}


def _skip_string(text: str, pos: int, multiline: bool = True) -> int:
    """The index after the string opening at ``pos`` (-1 when it never ends); TOML has
    multi-line strings in triple quotes, JSON none."""
    triple = multiline and text.startswith(text[pos] * 3, pos)
    quote = text[pos] * 3 if triple else text[pos]
    end = _STRING_END[quote].match(text, pos + len(quote))
    return end.end() if end else -1


def json_deeper_than(text: str, limit: int) -> bool:
    """Whether arrays and objects nest more than ``limit`` levels deep."""
    if text.count("[") + text.count("{") <= limit:
        return False  # too few brackets to go deeper: no need to look closer
    depth = deepest = 0
    found = _JSON_SPECIAL.search(text)
    while found and deepest <= limit:
        pos, char = found.start(), found.group()
        if char == '"':
            pos = _skip_string(text, pos, multiline=False) - 1
            if pos < 0:
                break
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
        found = _JSON_SPECIAL.search(text, pos + 1)
    return deepest > limit


class _TomlScan:
    """The state of one pass: which tables are open, and the parts of the key being read.

    A level is a table or array: a ``[table.header]`` part, a dotted-key part, an array
    or an inline table. ``stack`` holds the depth at each open array or inline table;
    ``base`` is the depth of the current ``[table]``; ``parts`` counts the key being read
    (``key`` False while reading a value); ``header`` is set inside ``[...]`` and
    ``array`` inside ``[[...]]``. Every part of a header but the last counts twice: it
    may name an array of tables written earlier (``[[a]]`` then ``[a.b]``), and the scan
    may count more levels than there are, never fewer."""

    def __init__(self) -> None:
        self.stack: list[tuple[str, int]] = []
        self.base = self.parts = self.deepest = 0
        self.key, self.header, self.array = True, False, False

    def level(self) -> int:
        return self.stack[-1][1] if self.stack else self.base

    def reach(self, depth: int) -> None:
        self.deepest = max(self.deepest, depth)

    def start_key(self) -> None:
        self.key, self.parts = True, 0

    def on(self, char: str) -> None:
        """One character outside strings and comments."""
        if char == "." and self.key:  # a dotted key: one more table
            self.parts += 1
            self.reach(self.level() + self.parts)
        elif char == "=" and self.key:
            self.key = False
        elif char == "[" and self.key and not self.stack:  # [table] or [[array of tables]]
            self.array = self.header
            self.header, self.base, self.parts = True, 0, 0
        elif char == "]" and self.header:
            self.base, self.header = 2 * self.parts + 1 + self.array, False
            self.reach(self.base)
            self.start_key()
        elif char in "[{" and not self.key:
            self.stack.append((char, self.level() + self.parts + 1))
            self.reach(self.stack[-1][1])
            self.parts = 0
            self.key = char == "{"
        elif char in "]}" and self.stack:  # what follows a closed one is not a key
            self.stack.pop()
            self.key, self.parts = False, 0
        elif char == "," and self.stack and self.stack[-1][0] == "{":
            self.start_key()
        elif char == "\n" and not self.stack and not self.header:
            self.start_key()


def toml_deeper_than(text: str, limit: int) -> bool:
    """Whether tables, dotted-key parts, arrays and inline tables nest more than ``limit``
    levels deep."""
    if 2 * sum(map(text.count, "[{.")) <= limit:
        return False  # each of these counts at most two levels: no need to look closer
    scan = _TomlScan()
    found = _TOML_SPECIAL.search(text)
    while found and scan.deepest <= limit:
        pos, char = found.start(), found.group()
        if char in "\"'":
            pos = _skip_string(text, pos) - 1
            if pos < 0:
                break
        elif char == "#":
            pos = text.find("\n", pos) - 1
            if pos < -1:
                break
        else:
            scan.on(char)
        found = _TOML_SPECIAL.search(text, pos + 1)
    return scan.deepest > limit
