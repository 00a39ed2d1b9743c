"""What `selector/arrow_without_pandas.py` saves: `selector select` with and without the
guard that keeps pandas out of pyarrow's first look, where pandas is installed.

pyarrow imports pandas itself the first time it converts a Python value, if pandas can
be imported; the guard lets that first look find none.  The core install has no pandas
and needs no guard; a laptop with the full install runs the hook with it.  Both variants
run the same `select` of the demo's store (``selector demo`` first), alternating, each in
a new process; the second disables the guard (``keep_pandas_out`` replaced by a no-op).

Run: python benchmarks/pandas_guard.py --demo selector-demo [--rounds 9]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, median  # noqa: E402

SELECT = "import sys; from perf_selector.selector.cli import cli; sys.argv = ['selector', 'select', 'HEAD', '--repo', {project!r}, " \
         "'--store', {store!r}, '--format', 'json']; {patch}cli()"
NO_GUARD = "import perf_selector.selector.arrow_without_pandas as guard; guard.keep_pandas_out = lambda: False; "


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, required=True, help="the folder `selector demo` made (project/ and store/)")
    parser.add_argument("--rounds", type=int, default=9)
    arguments = parser.parse_args()
    project, store = arguments.demo.resolve() / "project", arguments.demo.resolve() / "store"
    if not (store / "commits").is_dir():
        raise SystemExit(f"{store}: no store here; run `selector demo` first")

    def script(patch: str) -> str:
        return SELECT.format(project=str(project), store=str(store), patch=patch)

    def run(patch: str) -> None:
        subprocess.run([sys.executable, "-c", script(patch)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    # whether the process imported pandas, said on stderr at its exit
    probe = "import sys, atexit; atexit.register(lambda: sys.__stderr__.write(str('pandas' in sys.modules))); "
    loaded = {name: subprocess.run([sys.executable, "-c", probe + script(patch)], capture_output=True,
                                   text=True).stderr.strip().splitlines()[-1]
              for name, patch in (("guard", ""), ("no guard", NO_GUARD))}
    times = interleaved({"with the guard": lambda: run(""), "without it": lambda: run(NO_GUARD)}, arguments.rounds)
    ours, theirs = median(times["with the guard"]), median(times["without it"])
    print(f"pandas imported   with the guard: {loaded['guard']}   without it: {loaded['no guard']}")
    for name, values in times.items():
        print(f"{name:16s}  {median(values):.3f} s  (median of {arguments.rounds}; {', '.join(f'{v:.3f}' for v in values)})")
    print(f"with / without = {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
