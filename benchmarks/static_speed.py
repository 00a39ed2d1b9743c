"""Static analysis speed: fingerprinting libpython, as a ratio to `objdump -d` on the same file.

Both run in this one process run, alternating, `--rounds` times; the ratio of the
medians is printed (target: at most 0.5).  `analyse_binary` uses the compiled core
(native/) when it is built; the Python reference implementation, which gives the same
tables, is timed beside it (in one process and in forked workers) so the gain is seen.
Run: python benchmarks/static_speed.py
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, libpython, median  # noqa: E402

from perf_selector.collectors.analysis_tables import FUNCTION_COLUMNS  # noqa: E402
from perf_selector.collectors.python_analysis import analyse_in_python  # noqa: E402
from perf_selector.collectors.static_analysis import analyse_binary  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--binary", type=Path, default=None, help="another binary instead of libpython")
    arguments = parser.parse_args()
    binary = arguments.binary or libpython()
    analysis = analyse_binary(binary)
    column = FUNCTION_COLUMNS.index("instructions")  # from the rows: any tree's analysis has them (side_by_side.py)
    instructions = sum(row[column] for row in analysis.function_rows)

    def objdump() -> None:
        subprocess.run(["objdump", "-d", str(binary)], stdout=subprocess.DEVNULL, check=True)

    jobs = os.cpu_count() or 1
    candidates = {f"selector ({analysis.decoder})": lambda: analyse_binary(binary), "objdump -d": objdump,
                  "selector, Python reference": lambda: analyse_in_python(binary)}
    if jobs > 1:
        candidates[f"selector, Python reference, {jobs} processes"] = lambda: analyse_in_python(binary, jobs=jobs)
    times = interleaved(candidates, arguments.rounds)
    theirs = median(times["objdump -d"])
    print(f"binary        {binary}")
    print(f"functions     {len(analysis.function_rows)}   instructions {instructions}   decoder {analysis.decoder}")
    print(f"load average  {os.getloadavg()[0]:.2f} (other work on the machine slows the parallel run most)")
    print(f"{'objdump -d':44s} {theirs:.3f} s  (median of {arguments.rounds})")
    for name in candidates:
        if name.startswith("selector"):
            ours = median(times[name])
            print(f"{name:44s} {ours:.3f} s  ratio to objdump {ours / theirs:.2f}  (target <= 0.5)")


if __name__ == "__main__":
    main()
