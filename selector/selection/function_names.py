"""Function names as people read them: demangled, shortened to a column, parts by kind.

The tables key a C++ function by its mangled symbol (:mod:`collectors.symbols`); every
command prints it demangled, and the text tables shorten it to fit the terminal: a
template instance or an overload of the standard library demangles to hundreds of
characters (``std::_Rb_tree<std::__cxx11::basic_string<char, ...`` reached 978 columns on
LevelDB's db_bench).  JSON output keeps the whole names.
"""

from __future__ import annotations

import re

from perf_selector.collectors.symbols import clone_suffix, demangle, function_key, parent_symbol, thunk_target, variant_position

__all__ = ["readable", "shortened", "part_labels"]

ELLIPSIS = "…"
# What each constructor / destructor variant is (the Itanium C++ ABI's names).
VARIANT_WORDS = {"C1": "complete", "C2": "base", "C3": "allocating", "C4": "unified",
                 "D0": "deleting", "D1": "complete", "D2": "base", "D4": "unified"}
# A bracket, or an operator whose spelling holds brackets (not template arguments, matched whole).
_BRACKET = re.compile(r"operator(?:<=>|<<=|>>=|<<|>>|<=|>=|->\*|->|<|>|\(\))|[<>()]")


def readable(key: str) -> str:
    """The name a person reads for a table's key: demangled (a C name is its own)."""
    return demangle(key)


def shortened(name: str, width: int) -> str:
    """`name` in at most `width` characters, what tells it apart kept as long as can be:
    template argument lists are elided first, longest first (``basic_string<…>``), then
    parameter lists (``(…)``), then a function template's own arguments, the last one cut
    in its middle just enough to fit; what is still too long keeps its start (the
    qualified name) and its end, the middle elided."""
    if len(name) <= width:
        return name
    angles, parameters = _bracket_groups(name)  # scanned once: a name is cut in one go
    # A function template's own arguments (``_M_construct<char const*>(``) tell its
    # instances apart: they go after the class templates' and the parameters.
    own = [group for group in angles if parameters and group[1] == parameters[-1][0]]
    others = [group for group in angles if group not in own]
    kept: dict[tuple[int, int], int] = {}  # the text between a group's brackets -> how much of it is kept
    excess = len(name) - width
    for groups in (others, parameters, own):
        for start, end in sorted(groups, key=lambda group: group[0] - group[1]):
            if excess <= 0:
                break
            text = (start + 1, end - 1)
            if text[1] - text[0] <= 1:
                continue
            for inner in [cut for cut in kept if text[0] <= cut[0] and cut[1] <= text[1]]:
                excess += _saved(inner, kept.pop(inner))  # a parameter list's cut replaces those within it
            keep = (text[1] - text[0]) - excess - 1
            kept[text] = keep if keep >= 8 else 0  # enough to keep its start and end: cut to fit exactly
            excess -= _saved(text, kept[text])
    for (start, end), keep in sorted(kept.items(), reverse=True):
        name = name[:start + (keep + 1) // 2] + ELLIPSIS + name[end - keep // 2:]
    if len(name) <= width:
        return name
    if width < 2:
        return name[:width]
    tail = (width - 1) // 3
    return name[:width - 1 - tail] + ELLIPSIS + name[len(name) - tail:]


def _saved(text: tuple[int, int], keep: int) -> int:
    """How many characters cutting `text` (start, end) down to `keep` and an ellipsis saves."""
    return (text[1] - text[0]) - keep - 1


def _bracket_groups(name: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The outermost ``<...>`` groups of `name` as (start, end) with end past the ``>``, and
    its outermost ``(...)`` groups outside them (parameter lists; not ``(anonymous namespace)``)."""
    angles, parameters = [], []
    angle_depth = paren_depth = 0
    angle_start = paren_start = 0
    for match in _BRACKET.finditer(name):  # brackets only: a loop over every character costs milliseconds a name
        c, i = match[0], match.start()
        if c == "<":
            if angle_depth == 0:
                angle_start = i
            angle_depth += 1
        elif c == ">" and angle_depth > 0:
            angle_depth -= 1
            if angle_depth == 0:
                angles.append((angle_start, i + 1))
        elif c == "(" and angle_depth == 0:
            if paren_depth == 0:
                paren_start = i
            paren_depth += 1
        elif c == ")" and angle_depth == 0 and paren_depth > 0:
            paren_depth -= 1
            if paren_depth == 0 and not name.startswith("(anonymous namespace)", paren_start):
                parameters.append((paren_start, i + 1))
    return angles, parameters


def part_labels(parts: list[str]) -> str:
    """What each part of a function is, in a few words: ``body, .cold``; a constructor's
    ``complete, base``; a destructor's ``complete, deleting``; ``thunk`` for a virtual
    method's this-adjusting entry (``deleting thunk``).  Empty for a function of one plain part."""
    if len(parts) == 1 and "." not in parts[0] and not parts[0].startswith("_ZT"):
        return ""  # one plain part (the common case: no need to read its name)
    labels = [_part_label(raw) for raw in parts]
    if len(labels) == 1 and labels[0] in ("body", *VARIANT_WORDS.values()):
        return ""
    counts = dict.fromkeys(labels, 0)  # in order of appearance; one clone in each of 7 units: ".isra.0 ×7"
    for label in labels:
        counts[label] += 1
    return ", ".join(label if count == 1 else f"{label} ×{count}" for label, count in counts.items())


def _part_label(raw: str) -> str:
    parent = parent_symbol(raw)
    thunk = parent.startswith("_ZT") and function_key(parent) != parent
    target = thunk_target(parent) if thunk else parent
    position = variant_position(target)
    words = [VARIANT_WORDS[target[position:position + 2]]] if position is not None else []
    words += ["thunk"] if thunk else []
    suffix = clone_suffix(raw)
    return (" ".join(words) + suffix) if words or suffix else "body"
