"""Symbol names: demangling and the normalization that makes names comparable.

A function's identity across commits is its *parent* name: gcc's clones and
split parts (``foo.constprop.0``, ``foo.isra.0``, ``foo.part.0``, ``foo.cold``)
belong to ``foo``, and their numbering moves from build to build.  Static locals
(``counter.0``) are renumbered when another static is added, so their numeric
suffix is dropped too.
"""

from __future__ import annotations

import re
from functools import lru_cache

import cxxfilt

# gcc / clang clone and split suffixes; each may carry a number (.constprop.3).
_CLONE_SUFFIX = re.compile(
    r"\.(?:constprop|isra|part|cold|lto_priv|localalias|clone|llvm|specialized)(?:\.\d+)*"
)
_NUMERIC_SUFFIX = re.compile(r"(?:\.\d+)+$")
_COLD_PART = re.compile(r"\.cold(?:\.\d+)?(?:\.|$)")


@lru_cache(maxsize=65536)
def parent_symbol(raw: str) -> str:
    """The symbol a clone or part belongs to: ``foo.constprop.0.isra.1`` -> ``foo``."""
    match = _CLONE_SUFFIX.search(raw)
    stem = raw[: match.start()] if match else raw
    return _NUMERIC_SUFFIX.sub("", stem) or raw


def part_kind(raw: str) -> str:
    """The clone/part suffixes of a symbol without their numbers: ``.constprop.cold``."""
    match = _CLONE_SUFFIX.search(raw)
    if not match:
        return ""
    return re.sub(r"\.\d+", "", raw[match.start():])


def is_cold_part(raw: str) -> bool:
    return bool(_COLD_PART.search(raw))


@lru_cache(maxsize=65536)
def reference_name(raw: str) -> str:
    """How a reference to this symbol appears in a fingerprint: suffix numbers dropped.

    ``foo.constprop.2`` and ``foo.constprop.0`` are the same specialisation
    renumbered; ``foo`` and ``foo.constprop`` are different code and stay apart.
    """
    return parent_symbol(raw) + part_kind(raw)


@lru_cache(maxsize=None)
def demangle(raw: str) -> str:
    """Demangle an Itanium C++ name; anything else is returned unchanged."""
    if not raw.startswith("_Z"):
        return raw
    try:
        return cxxfilt.demangle(raw, external_only=False)
    except cxxfilt.InvalidName:
        return raw
