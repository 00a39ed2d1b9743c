"""Which x86-64 decoder: iced-x86 against capstone on the same task, in one run.

The task is the one the analysis needs: per function, count instructions and find the
address fields (branch targets, RIP-relative operands).  Both decoders must find the
same fields; the script checks that, then prints each one's time and the ratio.
Run: python benchmarks/decoder_choice.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, libpython, median  # noqa: E402

from perf_selector.collectors.decoder import CapstoneDecoder, IcedDecoder  # noqa: E402
from perf_selector.collectors.elf_image import STT_FUNC, ElfImage  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    image = ElfImage.load(libpython())
    functions = [(image.read(s.address, s.size), s.address) for s in image.symbols if s.kind == STT_FUNC and s.size]
    decoders = {"iced-x86": IcedDecoder(), "capstone": CapstoneDecoder()}

    def scan_all(decoder) -> list:
        return [decoder.scan(code, address) for code, address in functions]

    results = {name: scan_all(decoder) for name, decoder in decoders.items()}
    # Compare where each field starts and what it designates; count width disagreements apart
    # (capstone 5 reports 2-byte RIP displacements for some SSE instructions; they are 4 bytes).
    located = {name: [(n, [(f.start, f.target, f.kind) for f in fs]) for n, fs in r] for name, r in results.items()}
    agree = located["iced-x86"] == located["capstone"]
    widths = sum(a != b for a, b in zip(results["iced-x86"], results["capstone"]))
    times = interleaved({name: (lambda d=decoder: scan_all(d)) for name, decoder in decoders.items()}, arguments.rounds)
    instructions = sum(count for count, _ in results["iced-x86"])
    print(f"{len(functions)} functions, {instructions} instructions; both find the same address fields: {agree}")
    print(f"functions where capstone reports a different field width than iced-x86: {widths}")
    for name in decoders:
        print(f"{name:10s} {median(times[name]):.3f} s")
    print(f"capstone / iced-x86 = {median(times['capstone']) / median(times['iced-x86']):.1f}")


if __name__ == "__main__":
    main()
