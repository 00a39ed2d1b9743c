"""Sampling profiles with `perf record`: samples per function, and per instruction of the binary.

Hardware cycles where the machine counts them; the cpu-clock software event where it
does not (virtual machines, containers): `sampling_event()` finds out, and every
profile row says which event it counted.

The samples are read with `perf script`, one line per sample (process, instruction
pointer, symbol, object), with the processes' executable mappings and forks in between.
For the analysed binary each sample's instruction pointer is turned back into the
address the instruction has in the ELF file: the mapping that holds it gives its file
offset, the binary's loadable segments give the address at that offset.  So a
position-independent binary, loaded at another address in every process, lines up with
the static analysis and with callgrind's per-instruction counts
(features/executed_code.py weighs changed basic blocks with them).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterator

import pyarrow as pa

from perf_selector.collectors.arrow_rows import table_of_rows

from perf_selector.collectors.callgrind import INSTRUCTION_COLUMNS, normalize_function

PERF_COLUMNS = ["function", "object", "in_binary", "samples", "event", *INSTRUCTION_COLUMNS]
SCRIPT_FIELDS = "pid,ip,sym,dso"
PT_LOAD = 1

# " 3992      55a3867a515f spin (/tmp/prog)": the object is in the last parentheses
_SAMPLE = re.compile(r"^\s*(\d+)\s+([0-9a-f]+)\s+(.*?)\s*\(([^()]*)\)\s*$")
# "PERF_RECORD_MMAP2 3992/3992: [0x55a3867a5000(0x1000) @ 0x1000 fe:00 9979054 0]: r-xp /tmp/prog"
_MMAP = re.compile(r"PERF_RECORD_MMAP2? (-?\d+)/-?\d+: \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ (0x[0-9a-f]+|\d+)[^\]]*\]: \S+ (.*)$")
_FORK = re.compile(r"PERF_RECORD_FORK\((\d+):\d+\):\((\d+):\d+\)")
_EXEC = re.compile(r"PERF_RECORD_COMM exec: .*:(\d+)/\d+\s*$")


@lru_cache(maxsize=1)
def sampling_event() -> str:
    """``cycles`` if this machine has a hardware cycle counter perf can read, else ``cpu-clock``."""
    try:
        probe = subprocess.run(["perf", "stat", "-x", ",", "-e", "cycles", "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "cpu-clock"
    supported = probe.returncode == 0 and "not supported" not in probe.stderr and "not counted" not in probe.stderr
    return "cycles" if supported else "cpu-clock"


def perf_command(command: list[str], output: Path, event: str, frequency: int = 4000) -> list[str]:
    return ["perf", "record", "-q", "-e", event, "-F", str(frequency), "-o", str(output), "--", *command]


def read_perf(data: str | os.PathLike[str], binary: str | os.PathLike[str] | None, event: str) -> pa.Table:
    """Samples per (object, function) of a perf.data file, and for the binary's functions the
    samples at each instruction (ELF addresses, sorted), as callgrind's counts are stored."""
    binary_name = os.path.basename(os.path.realpath(binary)) if binary else None
    segments = _load_segments(binary) if binary else []
    mappings = _Mappings(binary_name)
    samples: dict[tuple[str, str], int] = defaultdict(int)
    by_instruction: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for line in _script_lines(data):
        sample = _SAMPLE.match(line)
        if sample is None:
            mappings.follow(line)
            continue
        pid, ip, symbol, obj = int(sample[1]), int(sample[2], 16), sample[3], os.path.basename(sample[4])
        function = normalize_function(symbol)
        samples[(obj, function)] += 1
        if obj == binary_name:
            address = _elf_address(mappings.file_offset(pid, ip), segments)
            if address is not None:
                by_instruction[function][address] += 1
    rows = [(name, obj, obj == binary_name, count, event, *_instruction_lists(by_instruction.get(name, {}) if obj == binary_name else {}))
            for (obj, name), count in samples.items()]
    return table_of_rows(rows, PERF_COLUMNS).sort_by([("samples", "descending")])


def _script_lines(data: str | os.PathLike[str]) -> Iterator[str]:
    """`perf script`'s lines, read as they come (a long run has millions of samples)."""
    # --no-demangle: symbols as the static table keys them (mangled for C++)
    command = ["perf", "script", "-i", str(data), "-F", SCRIPT_FIELDS, "--no-demangle", "--show-mmap-events", "--show-task-events"]
    # stderr to a file: a pipe nobody reads while the samples stream could fill and stall perf
    with tempfile.TemporaryFile("w+", errors="replace") as stderr:
        try:
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True, errors="replace")
        except OSError as error:
            raise RuntimeError(f"perf script failed: {error}") from None
        with process:
            yield from process.stdout
        stderr.seek(0)
        errors = stderr.read()
    if process.returncode != 0:
        raise RuntimeError(f"perf script failed: {errors.strip().splitlines()[-1] if errors.strip() else process.returncode}")


@dataclass
class _Mappings:
    """Where each process mapped the binary's code: (start, end, file offset) per process.
    A forked child starts with its parent's mappings; an exec starts afresh."""

    binary_name: str | None
    by_process: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)

    def follow(self, line: str) -> None:
        if (mmap := _MMAP.search(line)) is not None:
            if os.path.basename(mmap[5].strip()) == self.binary_name:
                start, length = int(mmap[2], 16), int(mmap[3], 16)
                self.by_process.setdefault(int(mmap[1]), []).append((start, start + length, int(mmap[4], 0)))
        elif (fork := _FORK.search(line)) is not None:
            child, parent = int(fork[1]), int(fork[2])
            if child != parent:  # a new thread of the same process shares its mappings already
                self.by_process[child] = list(self.by_process.get(parent, []))
        elif (exec_ := _EXEC.search(line)) is not None:
            self.by_process.pop(int(exec_[1]), None)

    def file_offset(self, pid: int, ip: int) -> int | None:
        for start, end, offset in reversed(self.by_process.get(pid, [])):  # the latest mapping wins
            if start <= ip < end:
                return ip - start + offset
        return None


def _load_segments(binary: str | os.PathLike[str]) -> list[tuple[int, int, int]]:
    """(file offset, size in the file, address) of each loadable segment of the binary."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(binary, "rb") as handle:
            return [(segment["p_offset"], segment["p_filesz"], segment["p_vaddr"])
                    for segment in ELFFile(handle).iter_segments() if segment["p_type"] == "PT_LOAD"]
    except (OSError, ELFError):
        return []  # no per-instruction samples, the per-function ones still count


def _elf_address(offset: int | None, segments: list[tuple[int, int, int]]) -> int | None:
    if offset is None:
        return None
    for start, size, address in segments:
        if start <= offset < start + size:
            return offset - start + address
    return None


def _instruction_lists(counts: dict[int, int]) -> tuple[list[int], list[int]]:
    """(addresses, samples) of the sampled instructions, in address order."""
    ordered = sorted(counts.items())
    return [address for address, _ in ordered], [count for _, count in ordered]
