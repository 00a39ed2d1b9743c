"""Which data objects point to which: the pointers stored in a binary's data.

Code reaches much of its data through other data: an interpreter's class structure points to
its member table, a dispatch table to the tables its handlers read, a registry to every
module.  A function's ``data_refs`` name only the objects its instructions address, so a
changed table reached through a pointer is invisible to them (Berry's generated member maps:
a new method changes a class's map, and every lookup in it walks other buckets).

The pointers are those the object fingerprints already resolve (collectors/python_analysis.py):
in a position-independent binary, the relocations whose slot lies in an object (relative ones
by their addend, symbolic ones by their symbol); in a fixed-address one, the aligned 8-byte
words of an object's bytes whose value falls inside an object.  Objects are given as the
store's ``objects`` table has them (name, address, size), so the names match ``data_refs``.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable, Mapping

import numpy as np

from perf_selector.collectors.elf_image import R_X86_64_64, R_X86_64_RELATIVE, ElfImage

PointerGraph = Mapping[str, frozenset[str]]  # object -> the objects its pointers point into


def pointer_graph(image: ElfImage, names: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> PointerGraph:
    """The objects each object of the binary points into (objects sorted by `starts`; self-pointers left out)."""
    def object_at(address: int) -> int:
        index = int(np.searchsorted(starts, address, side="right")) - 1
        return index if index >= 0 and address < ends[index] else -1

    by_name = {name: index for index, name in enumerate(names.tolist())}
    edges: dict[int, set[int]] = {}
    if image.position_independent:
        for slot, (kind, symbol, addend) in image.relocations.items():
            source = object_at(slot)
            if source < 0:
                continue
            target = object_at(addend) if kind == R_X86_64_RELATIVE else by_name.get(symbol, -1) if kind == R_X86_64_64 else -1
            if target >= 0 and target != source:
                edges.setdefault(source, set()).add(target)
    else:
        low, high = (int(starts[0]), int(ends.max())) if len(starts) else (0, 0)
        for source, (start, end) in enumerate(zip(starts.tolist(), ends.tolist())):
            contents = image.read(start, end - start)
            usable = len(contents) - len(contents) % 8
            if usable <= 0 or not any(contents):
                continue
            words = np.frombuffer(contents[:usable], dtype="<u8")
            for value in np.unique(words[(words >= low) & (words < high)]).tolist():
                target = object_at(value)
                if target >= 0 and target != source:
                    edges.setdefault(source, set()).add(target)
    return {names[source]: frozenset(names[target] for target in targets) for source, targets in edges.items()}


def reached_through(roots: Iterable[str], graph: PointerGraph) -> frozenset[str]:
    """`roots` and every object reached from them by following stored pointers."""
    reached = set(roots)
    waiting = deque(reached)
    while waiting:
        for target in graph.get(waiting.popleft(), ()):
            if target not in reached:
                reached.add(target)
                waiting.append(target)
    return frozenset(reached)
