"""Reading each compile unit's producer (the flags `collectors.build_config` digests): the
module's own top-DIE reader against pyelftools' DWARF parser, on the same files, in one run.

Subjects: glibc's separate debug file where the machine has it (libc6-dbg; found by the
build ID of the libc the dynamic linker loads), and a binary of many compile units built here
with gcc -g -O2.  Both readers must find the same (producer, comp_dir) pairs; the script
checks that, then prints each one's median time and the ratio.
Run: python benchmarks/build_config_speed.py [--rounds N] [--units N] [BINARY ...]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, median  # noqa: E402

from perf_selector.collectors.build_config import _compile_units, _Elf  # noqa: E402


def glibc_debug_file() -> Path | None:
    notes = subprocess.run(["readelf", "-n", "/lib/x86_64-linux-gnu/libc.so.6"], capture_output=True, text=True).stdout
    found = re.search(r"Build ID: ([0-9a-f]+)", notes)
    if not found:
        return None
    path = Path("/usr/lib/debug/.build-id") / found.group(1)[:2] / f"{found.group(1)[2:]}.debug"
    return path if path.is_file() else None


def many_units(directory: Path, units: int) -> Path:
    sources = []
    for index in range(units):
        sources.append(directory / f"unit{index}.c")
        sources[-1].write_text(f"int unit{index}(int x) {{ int s = 0; for (int i = 0; i < x; i++) s += i * {index + 1}; "
                               f"return s; }}\n")
    (directory / "main.c").write_text("int unit0(int);\nint main(void) { return unit0(3); }\n")
    binary = directory / "many_units"
    subprocess.run(["gcc", "-g", "-O2", "-o", str(binary), str(directory / "main.c"), *map(str, sources)], check=True)
    return binary


def with_pyelftools(path: Path) -> list[tuple[str, str]]:
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as handle:
        units = []
        for unit in ELFFile(handle).get_dwarf_info().iter_CUs():
            attributes = unit.get_top_DIE().attributes
            units.append(tuple(attributes[name].value.decode() if name in attributes else ""
                               for name in ("DW_AT_producer", "DW_AT_comp_dir")))
        return units


def with_top_die_reader(path: Path) -> list[tuple[str, str]]:
    return _compile_units(_Elf(path.read_bytes()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binaries", nargs="*", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--units", type=int, default=200, help="compile units of the binary built here")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        subjects = arguments.binaries or [p for p in (glibc_debug_file(), many_units(Path(directory), arguments.units)) if p]
        for subject in subjects:
            ours, theirs = with_top_die_reader(subject), with_pyelftools(subject)
            if ours != theirs:
                raise SystemExit(f"{subject}: the readers disagree ({len(ours)} units against {len(theirs)})")
            times = interleaved({"top-DIE reader": lambda: with_top_die_reader(subject),
                                 "pyelftools": lambda: with_pyelftools(subject)}, arguments.rounds)
            mine, other = median(times["top-DIE reader"]), median(times["pyelftools"])
            print(f"{subject.name}: {len(ours)} compile units, the same producers from both; "
                  f"top-DIE reader {mine:.3f} s, pyelftools {other:.3f} s: pyelftools takes {other / mine:.1f}x")


if __name__ == "__main__":
    main()
