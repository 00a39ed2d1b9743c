"""Another revision's benchmark scripts beside this tree's, in one run: before/after ratios.

Runs each named script of this checkout's benchmarks/ (features_speed, static_speed: the
same workload for both) on this checkout's code and on the ``--baseline`` checkout's in turn,
``--rounds`` times, alternating which goes first, each in its own process with that tree
first on the import path, and prints the median of
each figure per tree and their ratio (this tree / baseline; below 1 is faster for times).
select_latency takes ``--baseline`` itself (it builds one store for both trees).

Run: python benchmarks/side_by_side.py --baseline /tmp/base-checkout [--rounds 3] [features_speed static_speed]
The baseline checkout needs the compiled core too: copy collectors/_native*.so into it.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# script -> (arguments, {figure: pattern whose group is the number})
FIGURES = {
    "features_speed": (["--rounds", "3"], {
        "load store (s)": r"^load store\s+([\d.]+) s",
        "feature table (s)": r"^features\s+([\d.]+) s",
        "tuples/s": r"-> ([\d,]+) tuples/s",
    }),
    "static_speed": (["--rounds", "3"], {
        "compiled core (s)": r"^selector \(iced-x86 \(native\)\)\s+([\d.]+) s",
        "objdump -d (s)": r"^objdump -d\s+([\d.]+) s",
        "Python reference (s)": r"^selector, Python reference\s+([\d.]+) s",
    }),
}


def run(tree: Path, script: str) -> dict[str, float]:
    """This checkout's `script` (the same workload for both) run on `tree`'s code."""
    arguments, patterns = FIGURES[script]
    output = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{script}.py"), *arguments], capture_output=True,
                            text=True, check=True, env={**os.environ, "PYTHONPATH": str(tree)}).stdout
    figures = {}
    for name, pattern in patterns.items():
        found = re.search(pattern, output, re.MULTILINE)
        if found is None:
            raise SystemExit(f"{tree}/benchmarks/{script}.py printed no {name!r}:\n{output}")
        figures[name] = float(found.group(1).replace(",", ""))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("scripts", nargs="*", help=f"which ({', '.join(FIGURES)}) [default: all]")
    arguments = parser.parse_args()
    unknown = [script for script in arguments.scripts if script not in FIGURES]
    if unknown:
        parser.error(f"unknown script(s) {', '.join(unknown)}; choose from {', '.join(FIGURES)}")
    arguments.scripts = arguments.scripts or list(FIGURES)
    trees = {"this tree": ROOT, "baseline": arguments.baseline.resolve()}
    for script in arguments.scripts:
        results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for round_number in range(arguments.rounds):
            order = list(trees) if round_number % 2 == 0 else list(reversed(trees))
            for name in order:
                results[name].append(run(trees[name], script))
        print(f"{script}: median of {arguments.rounds} runs each, alternating (baseline {trees['baseline']})")
        for figure in FIGURES[script][1]:
            ours = statistics.median(r[figure] for r in results["this tree"])
            theirs = statistics.median(r[figure] for r in results["baseline"])
            print(f"  {figure:24s} this tree {ours:10.3f}   baseline {theirs:10.3f}   ratio {ours / theirs:.3f}")


if __name__ == "__main__":
    main()
