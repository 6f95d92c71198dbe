"""Line numbers of keys in a TOML text, for error messages (`tomllib` gives none for values).

`key_lines` maps every key and table header to its line; `line_of` finds the line of a key path
such as ``("algorithms", 1, "beta")``: its own line, the line on which entry 1 of an inline array
starts (an inline table is one line in TOML), or the line of its longest listed prefix.

Examples:
    >>> text = 'runs = 3\\nalgorithms = [\\n  "ttucb",\\n  {name = "a", beta = 2},\\n]'
    >>> line_of(text, ("runs",)), line_of(text, ("algorithms", 1, "beta"))
    (1, 4)
"""

from __future__ import annotations

import re

__all__ = ["array_entry_line", "key_lines", "line_of"]

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]")
_BARE = r"(?:[A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*')"
_KEY = re.compile(rf"^\s*({_BARE}(?:\s*\.\s*{_BARE})*)\s*=")


def _key_parts(text: str) -> tuple[str, ...]:
    return tuple(p.strip().strip("\"'") for p in text.split("."))


def key_lines(text: str) -> dict[tuple, int]:
    """Line number (1-based) of every key and table header of a TOML text, by key path.

    Array-of-tables entries (``[[algorithms]]``) get their index; keys inside inline tables
    and arrays are not listed (the enclosing key's line stands for them).

    >>> lines = key_lines('runs = 3\\n[[algorithms]]\\nname = "x"\\n[[algorithms]]\\nbeta = 2')
    >>> lines[("runs",)], lines[("algorithms", 0, "name")], lines[("algorithms", 1, "beta")]
    (1, 3, 5)
    """
    lines: dict[tuple, int] = {}
    table: tuple = ()
    counts: dict[tuple, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        header = _HEADER.match(line)
        if header:
            path = _key_parts(header.group(2))
            if header.group(1) == "[[":
                counts[path] = counts.get(path, -1) + 1
                path = (*path, counts[path])
            table = path
            lines.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key:
            lines.setdefault((*table, *_key_parts(key.group(1))), number)
    return lines


def array_entry_line(text: str, line: int, index: int) -> int | None:
    """The line on which entry ``index`` of the inline array whose key is on ``line`` starts.

    Scans from that key's ``=``, skipping strings and comments, counting the entries at the
    array's top level (an inline table is one line in TOML, so an entry starts on one line).
    """
    lines = text.splitlines(keepends=True)
    pos = sum(len(x) for x in lines[: line - 1])
    pos = text.index("=", pos) + 1
    depth, entry, number, quote, seen = 0, 0, line, None, False
    while pos < len(text):
        char = text[pos]
        if quote:
            quote = None if char == quote and text[pos - 1] != "\\" else quote
        elif char == "#":
            pos = text.find("\n", pos) - 1 if "\n" in text[pos:] else len(text)
        elif char in "\"'" or (char not in " \t\r\n,]" and depth == 1):
            if depth == 1 and not seen:
                if entry == index:
                    return number
                seen = True
            quote = char if char in "\"'" else None
            depth += char in "[{"
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return None
        elif char == "," and depth == 1:
            entry, seen = entry + 1, False
        number += char == "\n"
        pos += 1
    return None


def line_of(text: str, path: tuple) -> int | None:
    """The line of ``path``: its own, the start of its inline array entry, or the line of its
    longest listed prefix."""
    lines = key_lines(text)
    for end in range(len(path), 0, -1):
        if path[:end] in lines:
            line = lines[path[:end]]
            if end < len(path) and isinstance(path[end], int):
                return array_entry_line(text, line, path[end]) or line
            return line
    return None
