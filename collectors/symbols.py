"""Symbol names: the key that makes a function the same across builds, and demangling.

A function's identity across commits is its *key*, a symbol name:

* gcc's clones and split parts (``foo.constprop.0``, ``foo.isra.0``, ``foo.part.0``,
  ``foo.cold``) belong to ``foo``, and their numbering moves from build to build.  Static
  locals (``counter.0``) are renumbered when another static is added, so their numeric
  suffix is dropped too (:func:`parent_symbol`).
* A C++ constructor or destructor is emitted as several variants (complete ``C1``, base
  ``C2``, deleting ``D0``...), as aliases of one body or as separate bodies depending on
  the class and the flags: they are one function, keyed by the complete-object variant
  (:func:`function_key`: ``_ZN3FooC2Ev`` -> ``_ZN3FooC1Ev``).
* A versioned inline namespace (nlohmann/json's ``json_abi_v3_11_2``, {fmt}'s ``v10``,
  Abseil's ``lts_20240116``) renames every symbol in it at each release, while the code
  stays: a function is keyed without the version (:func:`unversioned`:
  ``nlohmann::json_abi_v3_11_2::basic_json<...>::parse`` -> ``nlohmann::json_abi_v::...``),
  so a release bump is a change of the functions whose code changed, not every function
  deleted and made anew.  Two versions of one library in a binary would share keys.

Keys stay mangled: a demangled name depends on the demangler (libstdc++'s, valgrind's,
perf's, c++filt's differ in spacing and detail) and costs time on every analysis, while
the mangled name is what every tool reads in the symbol table.  C names are not mangled
and are their own keys.  People read :func:`demangle`'d names.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable

# gcc / clang clone and split suffixes; each may carry a number (.constprop.3).
_CLONE_SUFFIX = re.compile(
    r"\.(?:constprop|isra|part|cold|lto_priv|localalias|clone|llvm|specialized)(?:\.\d+)*"
)
_NUMERIC_SUFFIX = re.compile(r"(?:\.\d+)+$")
_COLD_PART = re.compile(r"\.cold(?:\.\d+)?(?:\.|$)")
# The variants of a constructor (complete, base, allocating, gcc's unified body of
# -fdeclone-ctor-dtor) and of a destructor (deleting, complete, base, unified).
CTOR_VARIANTS, DTOR_VARIANTS = ("C1", "C2", "C3", "C4"), ("D0", "D1", "D2", "D4")
# A this-adjusting entry of a virtual method (non-virtual _ZTh, virtual _ZTv, covariant
# _ZTc offsets, then the method's encoding): another way into the method's code.
_THUNK = re.compile(r"^_ZT(?:h|v n?\d+_|c(?:h n?\d+_|v n?\d+_ n?\d+_)(?:h|v n?\d+_))n?\d+_".replace(" ", ""))
# gcc marks a name of internal linkage with L before it (_ZL3foov, _ZN1nL3barEv); an
# anonymous namespace is _GLOBAL__N_1.  A false positive only keeps clones apart per file.
_INTERNAL_LINKAGE = re.compile(r"L\d|_GLOBAL__N")
# The name of a versioned namespace: v9, v2_1 ({fmt} and others), a word and a version of two
# numbers or more (json_abi_v3_11_2, json_abi_diag_v3_11_2: nlohmann/json's ABI tags), Abseil's
# lts_20240116.  A class whose name ends in a single version (Header_v2) is not read as one:
# classes of two protocol versions side by side are common, namespaces so named are not.
_VERSIONED_NAMESPACE = re.compile(r"v\d+(?:_\d+)*|[A-Za-z_][A-Za-z0-9_]*_v\d+(?:_\d+)+|lts_\d+(?:_\d+)*")
_VERSION = re.compile(r"(?<=v)\d+(?:_\d+)*$|(?<=lts_)\d+(?:_\d+)*$")
_MAY_HOLD_VERSION = re.compile(r"\dv\d|_v\d|lts_\d")  # a quick no for most names


@lru_cache(maxsize=65536)
def parent_symbol(raw: str) -> str:
    """The symbol a clone or part belongs to: ``foo.constprop.0.isra.1`` -> ``foo``."""
    match = _CLONE_SUFFIX.search(raw)
    stem = raw[: match.start()] if match else raw
    return _NUMERIC_SUFFIX.sub("", stem) or raw


@lru_cache(maxsize=65536)
def function_key(raw: str) -> str:
    """The function a symbol belongs to: its parent, a constructor or destructor variant
    as the complete-object one (``_ZN3FooD0Ev.cold`` -> ``_ZN3FooD1Ev``), a thunk as its
    method (``_ZThn8_N3Foo3runEv`` -> ``_ZN3Foo3runEv``), a versioned namespace without its
    version (:func:`unversioned`)."""
    parent = unversioned(thunk_target(parent_symbol(raw)))
    position = variant_position(parent)
    if position is None:
        return parent
    canonical = "C1" if parent[position] == "C" else "D1"
    return parent[:position] + canonical + parent[position + 2:]


@lru_cache(maxsize=65536)
def unversioned(raw: str) -> str:
    """A mangled name with the version of each versioned namespace dropped:
    ``_ZN8nlohmann16json_abi_v3_11_210basic_json...`` -> ``_ZN8nlohmann10json_abi_v10basic_json...``,
    ``_ZN3fmt2v96detail...`` -> ``_ZN3fmt1v6detail...``; in template arguments too
    (``std::map<std::string, nlohmann::json_abi_v3_11_2::basic_json<...>>``).

    A namespace is a component of a nested name (``N`` ... ``E``) that another component
    follows.  The walk reads length-prefixed identifiers and skips their text, so a letter
    inside one is never taken for a production; the numbers of other productions are read
    with them (substitutions ``S1_``, template parameters ``T0_``, literals ``Li3E``, array
    and vector sizes ``A4_`` ``Dv4_``, function parameters ``fp0_``), never as a length.  What
    it still misreads can only leave a version in place, never drop one elsewhere."""
    if "_Z" not in raw or not _MAY_HOLD_VERSION.search(raw):
        return raw
    pieces, i, end, nested, after_n = [], 0, len(raw), False, False
    while i < end:
        c = raw[i]
        if c.isdigit():  # a source name's length: every other number is read with its production below
            digits = i
            while i < end and raw[i].isdigit():
                i += 1
            length = int(raw[digits:i])
            if length == 0 or i + length > end:
                pieces.append(raw[digits:i])
                nested = after_n = False
                continue
            name = raw[i:i + length]
            i += length
            follows = raw[i] if i < end else ""
            if nested and (follows.isdigit() or follows == "L") and _VERSIONED_NAMESPACE.fullmatch(name):
                name = _VERSION.sub("", name)
            pieces.append(f"{len(name)}{name}")
            after_n = False
            continue
        numbered = _numbered_production(raw, i)
        if numbered > i:
            pieces.append(raw[i:numbered])
            if c not in "ST":  # a substitution or template parameter may begin a nested name's prefix
                nested = False
            i, after_n = numbered, False
            continue
        if c == "N":
            nested, after_n = True, True
        elif c == "L" and nested:
            pass  # gcc's internal-linkage mark before a component
        elif not (after_n and c in "rVKRO"):  # cv- and ref-qualifiers of a member function
            nested = after_n = False
        pieces.append(c)
        i += 1
    return "".join(pieces)


def _numbered_production(raw: str, i: int) -> int:
    """Where a production at `i` that holds a number which is not a length ends, or `i`:
    ``S<seq-id>_``, ``T<n>_``, ``L<builtin type><value>E``, ``A<n>_``, ``Dv<n>_``, ``fp<n>_``."""
    end, c = len(raw), raw[i]
    following = raw[i + 1] if i + 1 < end else ""
    if c in "ST" and (following.isdigit() or following.isupper() or following == "_"):
        close = raw.find("_", i + 1)
        if close > 0 and all(ch.isdigit() or ch.isupper() for ch in raw[i + 1:close]):
            return close + 1
        return i
    if c == "L" and following and following in _BUILTIN_TYPES:
        close = raw.find("E", i + 2)
        return close + 1 if close > 0 else i
    if c == "A" or (c == "v" and i > 0 and raw[i - 1] == "D") or (c == "p" and i > 0 and raw[i - 1] == "f"):
        digits = i + 1
        while digits < end and raw[digits].isdigit():
            digits += 1
        return digits if digits > i + 1 else i
    return i


def thunk_target(raw: str) -> str:
    """The method a thunk enters (``_ZThn8_N3Foo3runEv`` -> ``_ZN3Foo3runEv``); any other name itself."""
    thunk = _THUNK.match(raw)
    return "_Z" + raw[thunk.end():] if thunk else raw


def part_kind(raw: str) -> str:
    """The clone/part suffixes of a symbol without their numbers: ``.constprop.cold``."""
    match = _CLONE_SUFFIX.search(raw)
    if not match:
        return ""
    return re.sub(r"\.\d+", "", raw[match.start():])


def clone_suffix(raw: str) -> str:
    """The clone/part suffixes as written: ``.constprop.0.cold``."""
    match = _CLONE_SUFFIX.search(raw)
    return raw[match.start():] if match else ""


def is_cold_part(raw: str) -> bool:
    return bool(_COLD_PART.search(raw))


@lru_cache(maxsize=65536)
def reference_name(raw: str) -> str:
    """How a reference to this symbol appears in a fingerprint: its function's key and
    the kind of part it is, numbers dropped.

    ``foo.constprop.2`` and ``foo.constprop.0`` are the same specialisation
    renumbered; ``foo`` and ``foo.constprop`` are different code and stay apart; a call
    to a base constructor reads the same whether it is an alias of the complete one or not.
    """
    return function_key(raw) + part_kind(raw)


def has_external_linkage(raw: str) -> bool:
    """Whether a mangled C++ name has external linkage: every copy of it in the binary
    (a local clone in each translation unit of an inline function or template) is the one
    function (the one definition rule).  False for C names: a static function and a
    clone of a global one cannot be told apart by name there."""
    return raw.startswith("_Z") and not _INTERNAL_LINKAGE.search(raw)


def variant_position(raw: str) -> int | None:
    """Where the constructor/destructor variant code (``C2``, ``D0``...) of a mangled
    member name is, or None.

    Walks the nested name (``_ZN`` [qualifiers] components ``E``): length-prefixed
    identifiers, standard substitutions, template arguments; anything it does not know
    ends the walk without an answer, so a name is never misread, at worst not folded.
    A member of a local class (``_ZZ <function> E N ... E``) is walked from the nested
    name after the function, found from the end.
    """
    if raw.startswith("_ZN"):
        return _nested_variant(raw, 3)
    if raw.startswith("_ZZ"):
        start = raw.rfind("EN")
        while start > 3:
            position = _nested_variant(raw, start + 2)
            if position is not None:
                return position
            start = raw.rfind("EN", 0, start)
    return None


def _nested_variant(raw: str, i: int) -> int | None:
    """:func:`variant_position` from `i`, just after a nested name's ``N``."""
    end = len(raw)
    while i < end and raw[i] in "rVKRO":
        i += 1
    while i < end:
        c = raw[i]
        if c.isdigit():
            i = _after_identifier(raw, i)
        elif c == "L" and i + 1 < end and raw[i + 1].isdigit():
            i += 1  # gcc's internal-linkage mark before an identifier
        elif c == "S":
            i = _after_substitution(raw, i)
        elif c == "I":
            i = _after_template_arguments(raw, i)
        elif c == "B":
            i = _after_identifier(raw, i + 1)  # an ABI tag: B5cxx11
        elif c in "CD" and i + 2 <= end and raw[i:i + 2] in CTOR_VARIANTS + DTOR_VARIANTS:
            return i if i + 2 < end and raw[i + 2] in "EIB" else None
        else:
            return None
        if i is None:
            return None
    return None


def _after_identifier(raw: str, i: int) -> int | None:
    start = i
    while i < len(raw) and raw[i].isdigit():
        i += 1
    if i == start:
        return None
    i += int(raw[start:i])
    return i if i <= len(raw) else None


def _after_substitution(raw: str, i: int) -> int | None:
    """``St``, ``Sa``... or ``S_``, ``S<seq-id>_``."""
    if i + 1 < len(raw) and raw[i + 1] in "tabsiod":
        return i + 2
    close = raw.find("_", i + 1)
    if close < 0 or not all(ch.isdigit() or ch.isupper() for ch in raw[i + 1:close]):
        return None
    return close + 1


_BUILTIN_TYPES = frozenset("vwbcahstijlmxynoefdgz")
_QUALIFIERS = frozenset("PRKVrO")


def _after_template_arguments(raw: str, i: int) -> int | None:
    """Past the ``I ... E`` of template arguments (nested ones included), or None when
    they hold something this walk does not read (expressions, lambdas, packs)."""
    depth, end = 0, len(raw)
    while i < end:
        c = raw[i]
        if c.isdigit():
            i = _after_identifier(raw, i)
            if i is None:
                return None
            continue
        if c in "IN":
            depth += 1
        elif c == "E":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == "L":  # a literal: L <builtin type> [n] <digits> E
            close = raw.find("E", i)
            value = raw[i + 2:close].removeprefix("n")
            if close < 0 or raw[i + 1] not in _BUILTIN_TYPES or not value.isdigit():
                return None
            i = close + 1
            continue
        elif c == "S":
            i = _after_substitution(raw, i)
            if i is None:
                return None
            continue
        elif c == "T":  # a template parameter: T_ or T<number>_
            close = raw.find("_", i)
            if close < 0 or not raw[i + 1:close].isdigit() and close != i + 1:
                return None
            i = close + 1
            continue
        elif c not in _BUILTIN_TYPES and c not in _QUALIFIERS:
            return None
        i += 1
    return None


def keys_by_demangled_name(raw_names: Iterable[str]) -> dict[str, str]:
    """C++ function keys under the names a demangling profiler prints for their symbols
    (``Foo::Foo()`` for ``_ZN3FooC2Ev``: ``_ZN3FooC1Ev``).  A name two keys share (two
    static functions of one name) is left out: it names neither for sure."""
    found: dict[str, str] = {}
    shared = set()
    for raw in raw_names:
        if not raw.startswith("_Z"):
            continue  # C: a name is its own key
        key, name = function_key(raw), demangle(parent_symbol(raw))
        if found.setdefault(name, key) != key:
            shared.add(name)
    return {name: key for name, key in found.items() if name not in shared}


# ------------------------------------------------------------------ demangling
class _CxaDemangler:
    """libstdc++'s ``__cxa_demangle`` through ctypes, loaded by its soname: the cxxfilt
    package finds the libraries with ``ctypes.util.find_library``, which runs ldconfig
    and costs more than demangling a small binary's names."""

    def __init__(self) -> None:
        import ctypes

        libcxx, libc = ctypes.CDLL("libstdc++.so.6"), ctypes.CDLL("libc.so.6")
        self._ctypes = ctypes
        self._demangle = getattr(libcxx, "__cxa_demangle")  # not `libcxx.__cxa_demangle`: Python would mangle the name in a class
        self._demangle.restype = ctypes.c_void_p
        self._demangle.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        self._free = libc.free
        self._free.argtypes = [ctypes.c_void_p]

    def __call__(self, raw: str) -> str | None:
        status = self._ctypes.c_int()
        pointer = self._demangle(raw.encode(), None, None, self._ctypes.byref(status))
        if not pointer:
            return None
        try:
            return self._ctypes.string_at(pointer).decode("utf-8", "replace")
        finally:
            self._free(pointer)


@lru_cache(maxsize=1)
def _demangler():
    try:
        return _CxaDemangler()
    except (OSError, AttributeError):  # no libstdc++ by that name (musl, libc++): cxxfilt finds one
        import cxxfilt

        def demangle_with_cxxfilt(raw: str) -> str | None:
            try:
                return cxxfilt.demangle(raw, external_only=False)
            except cxxfilt.Error:
                return None

        return demangle_with_cxxfilt


# gcc names a translation unit's static initializer (and finalizer) after its first
# function: c++filt's words for them.
_STATIC_INITIALIZERS = (("_GLOBAL__sub_I_", "global constructors keyed to "), ("_GLOBAL__sub_D_", "global destructors keyed to "))


@lru_cache(maxsize=None)
def demangle(raw: str) -> str:
    """The name a person reads: an Itanium C++ name demangled, a clone suffix kept as gcc's
    demangler writes it (``f(int) [clone .cold]``); anything else unchanged.  A key with
    a suffix of ours (``helper [file.c]``, ``counter#2``) keeps it."""
    for prefix, words in _STATIC_INITIALIZERS:
        if raw.startswith(prefix) and raw.startswith("_Z", len(prefix)):
            return words + demangle(raw[len(prefix):])
    if not raw.startswith("_Z"):
        return raw
    symbol, space, rest = raw.partition(" ")
    hash_at = symbol.find("#")
    if hash_at > 0:
        symbol, rest = symbol[:hash_at], symbol[hash_at:] + space + rest
        space = ""
    demangled = _demangler()(symbol)
    return raw if demangled is None else demangled + space + rest
