"""Running a command under valgrind's callgrind and reading its per-function profile.

Callgrind counts instructions, not time: on an unchanged binary with unchanged input
the counts repeat exactly, unless the program itself varies (hash seeds from
addresses or the clock), which `selector calibrate` finds out.

The parser reads callgrind's documented output format (name compression, relative
positions, ``calls=`` lines followed by the inclusive cost of those calls).  Runs record
costs per instruction (``--dump-instr=yes``): for the analysed binary the profile keeps
each executed instruction's own count, which is what lets the features see how much of
the run a change touches below the function level (features/executed_code.py).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pyarrow as pa

from perf_selector.collectors.arrow_rows import table_of_rows

from perf_selector.collectors.code_image import CodeImage
from perf_selector.collectors.errors import BinaryError
from perf_selector.collectors.symbols import demangle, function_key, keys_by_demangled_name
from perf_selector.collectors.frameworks.base import TimedLoop  # noqa: F401 - where the runner's callers have it
from perf_selector.collectors.run_context import tool_path

PROFILE_COLUMNS = ["function", "object", "in_binary", "calls", "self_instructions", "inclusive_instructions"]
# Per executed instruction of the binary's functions: its address (as in the ELF file) and
# how often it ran.  Empty lists for other objects and for profilers without them.
INSTRUCTION_COLUMNS = ["instruction_addresses", "instruction_counts"]
_RECURSION = re.compile(r"'\d+$")
_CLONE_NOTE = re.compile(r" \[clone [^\]]*\]")
_NAMED = re.compile(r"^\((\d+)\)(?: (.*))?$")


def callgrind_command(command: list[str], output: Path, isolate: str | None = None,
                      loop: TimedLoop | None = None) -> list[str]:
    """The command line that runs `command` under callgrind, writing `output`; with `isolate`,
    counting only while a function matching that pattern runs (its callees included); with
    `loop`, costs are zeroed when the loop starts and dumped (to `output`.N) when it
    finishes: :func:`keep_loop_parts` then makes `output` the loop's own profile."""
    toggle = [f"--toggle-collect={isolate}"] if isolate else []
    if loop:
        toggle += [*([f"--zero-before={loop.start}"] if loop.start else []), loop.trigger,
                   *([f"--dump-before={loop.marker}"] if loop.marker else [])]
    return [tool_path("valgrind"), "--tool=callgrind", f"--callgrind-out-file={output}", "--dump-line=no", "--dump-instr=yes",
            *toggle, "--quiet", *command]


def keep_loop_parts(output: Path, loop: TimedLoop) -> int | None:
    """After a run with `loop`: the instructions of the timed loop (summed over the loop's
    runs; with a marker, the one part it picks), with `output` replaced by the largest (the
    picked) loop's profile and the other parts removed; None, `output` untouched, when no loop
    finished (the framework's functions never ran or were not found by name): the count is
    then the whole of what `isolate` let through."""
    parts = [part for part in output.parent.glob(f"{output.name}.*") if part.suffix[1:].isdigit()]
    parts.sort(key=lambda part: int(part.suffix[1:]))  # in the order callgrind wrote them
    triggers = [_trigger(part) for part in parts]
    if loop.marker:
        loops = _picked(parts, triggers, loop)
    else:
        loops = [(callgrind_total(part), part) for part, trigger in zip(parts, triggers) if fnmatch.fnmatchcase(
            trigger, loop.trigger)]
    if not loops:
        for part in parts:
            part.unlink()
        return None
    largest = max(loops, key=lambda item: item[0])[1]
    largest.replace(output)
    for part in parts:
        if part != largest:
            part.unlink(missing_ok=True)
    return sum(total for total, _ in loops)


def _picked(parts: list[Path], triggers: list[str], loop: TimedLoop) -> list[tuple[int, Path]]:
    """The first timed part after the start of the `loop.position`-th benchmark (consecutive
    marker dumps are one start: a reporter may forward the call to another)."""
    starts, previous_marker = -1, False
    for part, trigger in zip(parts, triggers):
        marker = fnmatch.fnmatchcase(trigger, f"--dump-before={loop.marker}")
        if marker and not previous_marker:
            starts += 1
        previous_marker = marker
        if not marker and starts == loop.position and fnmatch.fnmatchcase(trigger, loop.trigger):
            return [(callgrind_total(part), part)]
        if starts > loop.position:
            break
    return []


def _trigger(path: Path) -> str:
    """What made callgrind write this part ("desc: Trigger: ..."), '' if the header says not."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.startswith("desc: Trigger:"):
                return line.removeprefix("desc: Trigger:").strip()
            if line.startswith(("fn=", "summary:", "totals:")):
                break
    return ""


def binary_keys(binary: str | os.PathLike[str] | None) -> dict[str, str]:
    """The binary's C++ functions' keys under the names callgrind and Pin print for them
    (demangled: callgrind's --toggle-collect patterns are written so), {} for a C binary
    or one that cannot be read."""
    if not binary:
        return {}
    try:
        image = CodeImage.load(str(binary))
    except (BinaryError, OSError):
        return {}
    return keys_by_demangled_name(image.function_names())


def close_functions(binary: str | os.PathLike[str] | None, pattern: str, count: int = 5) -> list[str]:
    """The binary's functions (demangled) whose names come closest to a callgrind function
    pattern that matched none: what the pattern most likely meant (a namespace left out, a
    parameter list that differs)."""
    import difflib
    import fnmatch

    if not binary:
        return []
    try:
        names = sorted({demangle(raw) for raw in CodeImage.load(str(binary)).function_names()})
    except (BinaryError, OSError):
        return []
    core = pattern.strip("*")
    bare = core.split("(")[0].rsplit("::", 1)[-1]  # the function's own name, without scope and parameters
    containing = [name for name in names if bare and bare in name.split("(")[0]]
    matched = [name for name in names if fnmatch.fnmatchcase(name, f"*{bare}*")] if not containing else containing
    return (matched or difflib.get_close_matches(core, names, n=count, cutoff=0.4))[:count]


def normalize_function(name: str) -> str:
    """The function a profiler's entry belongs to, as the static table keys it.

    ``fib'2`` (a recursion level), ``foo.constprop.0``, ``foo.cold`` all become their
    parent, a C++ constructor variant (``_ZN3FooC2Ev``, as perf prints it) its
    function's key; a name a profiler demangled, ``f(int) [clone .isra.0]``, loses its
    clone note (:func:`binary_keys` gives its key).
    """
    name = _RECURSION.sub("", name)
    name = _CLONE_NOTE.sub("", name)
    return function_key(name) if "(" not in name else name


@dataclass
class _Function:
    self_cost: int = 0
    calls_in: int = 0
    calls_out: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # callee key -> inclusive cost
    by_instruction: dict[int, int] = field(default_factory=lambda: defaultdict(int))  # address -> own cost


@dataclass
class CallgrindProfile:
    total_instructions: int
    functions: pa.Table  # PROFILE_COLUMNS + INSTRUCTION_COLUMNS, hottest (inclusive) first


def read_callgrind(path: str | os.PathLike[str], binary: str | os.PathLike[str] | None = None) -> CallgrindProfile:
    """Per-function calls, self and inclusive instructions (event Ir) of one callgrind file.

    Functions of `binary` are marked ``in_binary``; the others (shared libraries)
    keep their object's name.  Entries of one function (recursion levels, clones,
    split parts) are merged; calls between them are not counted as inclusive cost twice.
    When the file has instruction positions, the binary's functions also list the own
    cost of each executed instruction (INSTRUCTION_COLUMNS).
    """
    binary_path = os.path.realpath(binary) if binary else None
    names: dict[str, dict[str, str]] = {"ob": {}, "fl": {}, "fn": {}}
    functions: dict[tuple[str, str], _Function] = defaultdict(_Function)
    current: tuple[str, str] = ("", "")
    current_object = ""
    callee_object = None
    callee: str | None = None
    pending_call: tuple[str, str] | None = None
    total = None
    event_index = 0
    positions = 1  # position fields before the costs (instr, line, or both)
    instruction_position = False
    address = 0
    in_binary_object = False

    def resolve(kind: str, value: str) -> str:
        match = _NAMED.match(value)
        if not match:
            return value
        identifier, text = match.groups()
        if text is not None:
            names[kind][identifier] = text
            return text
        return names[kind].get(identifier, value)

    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if not line or line[0] == "#":
                continue
            head = line[0]
            if head.isdigit() or head in "+-*":
                fields = line.split()
                cost = int(fields[positions + event_index]) if len(fields) > positions + event_index else 0
                if instruction_position:
                    address = _position(fields[0], address)
                if pending_call is not None:
                    functions[current].calls_out[pending_call] += cost
                    pending_call = None
                else:
                    functions[current].self_cost += cost
                    if instruction_position and in_binary_object:
                        functions[current].by_instruction[address] += cost
                continue
            key, _, value = line.partition("=")
            if key == "ob":
                current_object = resolve("ob", value)
                in_binary_object = binary_path is not None and os.path.realpath(current_object) == binary_path
            elif key == "fn":
                current = (current_object, resolve("fn", value))
                functions[current]
                callee_object = None
            elif key == "cob":
                callee_object = resolve("ob", value)
            elif key == "cfn":
                callee = resolve("fn", value)
            elif key in ("fl", "fi", "fe", "cfi", "cfl"):
                resolve("fl", value)
            elif key == "calls":
                count = int(value.split()[0])
                target = (callee_object if callee_object is not None else current_object, callee)
                functions[target].calls_in += count
                pending_call = target
                callee_object = None
            elif line.startswith("events:"):
                event_index = line.split()[1:].index("Ir") if "Ir" in line.split()[1:] else 0
            elif line.startswith("positions:"):
                kinds = line.split()[1:]
                positions, instruction_position = len(kinds), kinds[:1] == ["instr"]
            elif line.startswith(("summary:", "totals:")) and total is None:
                total = int(line.split()[1 + event_index])
    if total is None:
        raise ValueError(f"{path}: not a complete callgrind output (no summary or totals line)")
    return CallgrindProfile(total, _merge(functions, binary))


def callgrind_total(path: str | os.PathLike[str]) -> int:
    """The total instruction count of a callgrind output, without parsing its functions."""
    event_index = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.startswith("events:"):
                events = line.split()[1:]
                event_index = events.index("Ir") if "Ir" in events else 0
            elif line.startswith(("summary:", "totals:")):
                return int(line.split()[1 + event_index])
    raise ValueError(f"{path}: not a complete callgrind output (no summary or totals line)")


def _position(field: str, last: int) -> int:
    """An instruction position: absolute (hex or decimal), relative to the last one (+n, -n), or the same (*)."""
    if field == "*":
        return last
    if field[0] in "+-":
        return last + int(field)
    return int(field, 16) if field.startswith("0x") else int(field)


def _merge(functions: dict[tuple[str, str], _Function], binary) -> pa.Table:
    binary_path = os.path.realpath(binary) if binary else None
    in_binary = {obj: bool(binary_path) and os.path.realpath(obj) == binary_path for obj in {obj for obj, _ in functions}}
    keys = binary_keys(binary_path) if any(in_binary.values()) else {}

    @lru_cache(maxsize=None)
    def normalized(obj: str, raw: str | None) -> str:
        if raw is None:
            return ""
        name = normalize_function(raw)
        return keys.get(name, name) if in_binary.get(obj) else name

    merged: dict[tuple[str, str], list[int]] = {}
    by_instruction: dict[tuple[str, str], dict[int, int]] = defaultdict(dict)
    for (obj, raw), data in functions.items():
        key = (obj, normalized(obj, raw))
        for address, cost in data.by_instruction.items():
            by_instruction[key][address] = by_instruction[key].get(address, 0) + cost
        row = merged.setdefault(key, [0, 0, 0])
        row[0] += data.calls_in
        row[1] += data.self_cost
        # inclusive = own cost + cost of calls that leave the (merged) function
        row[2] += data.self_cost + sum(
            cost for (callee_obj, callee), cost in data.calls_out.items() if (callee_obj, normalized(callee_obj, callee)) != key
        )
    rows = [
        (name, os.path.basename(obj), in_binary[obj], calls, own, inclusive, *_instruction_lists(by_instruction.get((obj, name), {})))
        for (obj, name), (calls, own, inclusive) in merged.items()
        if name
    ]
    return table_of_rows(rows, PROFILE_COLUMNS + INSTRUCTION_COLUMNS).sort_by([("inclusive_instructions", "descending")])


def _instruction_lists(costs: dict[int, int]) -> tuple[list[int], list[int]]:
    """(addresses, own costs) of the executed instructions, in address order."""
    executed = sorted((address, cost) for address, cost in costs.items() if cost)
    return [address for address, _ in executed], [cost for _, cost in executed]
