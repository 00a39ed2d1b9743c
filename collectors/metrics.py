"""The metrics a benchmark is measured by: one registry, as models/registry.py is for models.

Each metric says its unit, whether it is a count that repeats exactly for a deterministic
program (then calibration may call it exact and a label may be decided by its effect alone),
what it runs under (natively, or a valgrind tool), its default warm-ups, whether it measures
memory, and how its value is read from a finished run.  A name that is not registered is read
from what the benchmark prints: a regex with one group, or a framework's field (Google
Benchmark's real_time, a user counter).

Adding a metric is one entry here (and, for a new tool, its reader below).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    count: bool  # a count that repeats exactly for a deterministic program (calibration may call it exact)
    tool: str | None  # the valgrind tool it runs under ("callgrind", "dhat"), or None: natively
    warmup: int  # warm-up runs unless a benchmark sets them: none where a warm cache cannot change the value
    memory: bool  # memory, not time: code that allocates is what can change it
    description: str


WALL_TIME = Metric("wall_time", "s", False, None, 1, False, "seconds from start to exit")
CPU_TIME = Metric("cpu_time", "s", False, None, 1, False,
                  "user + system seconds of the process and its waited-for descendants (the kernel's account: "
                  "a busy machine's waits left out)")
# Not from the wait4 account that cpu_time reads: a child forked from this Python process carries
# the parent's resident pages until it execs, and the kernel folds them into its peak (about 50 MB
# here, whatever the benchmark).  GNU time forks the benchmark from a small process of its own.
MAX_RSS = Metric("max_rss", "bytes", False, "time", 1, True,
                 "peak resident memory of the benchmark process (GNU time's %M)")
INSTRUCTIONS = Metric("instructions", "instructions", True, "callgrind", 0, False, "instructions executed, under callgrind")
HEAP_BYTES = Metric("heap_bytes", "bytes", True, "dhat", 0, True, "bytes allocated on the heap over the run, under DHAT")
HEAP_BLOCKS = Metric("heap_blocks", "blocks", True, "dhat", 0, True, "heap blocks allocated over the run, under DHAT")
METRICS = {metric.name: metric for metric in (WALL_TIME, CPU_TIME, MAX_RSS, INSTRUCTIONS, HEAP_BYTES, HEAP_BLOCKS)}
PRINTED = "as printed"  # the unit of a metric read from the benchmark's output
# per-iteration times of a framework's report, in seconds once read: Google Benchmark's real_time
# and cpu_time (in its time_unit), Catch2's mean (collectors/frameworks: each framework's `times`)
FRAMEWORK_TIMES = ("real_time", "cpu_time", "mean")


def registered(name: str) -> Metric | None:
    """The registered metric of this name, or None (a regex or a framework's field)."""
    return METRICS.get(name)


def metric_unit(name: str) -> str:
    """The unit a metric's values are in."""
    metric = registered(name)
    if metric is not None:
        return metric.unit
    return "s" if name in FRAMEWORK_TIMES else PRINTED


def under_callgrind(name: str) -> bool:
    """Does the metric run the benchmark under callgrind (its count is the callgrind profile's)?"""
    metric = registered(name)
    return metric is not None and metric.tool == "callgrind"


def is_count(name: str) -> bool:
    """Is the metric a count that can repeat exactly (calibration decides whether it does)?"""
    metric = registered(name)
    return metric is not None and metric.count


def is_memory(name: str) -> bool:
    metric = registered(name)
    return metric is not None and metric.memory


def uses_valgrind(name: str) -> bool:
    """Does the metric run the benchmark under a valgrind tool (callgrind, DHAT)?"""
    metric = registered(name)
    return metric is not None and metric.tool in ("callgrind", "dhat")


def default_warmup(name: str) -> int:
    """Warm-up runs of a benchmark that does not set them."""
    metric = registered(name)
    return metric.warmup if metric is not None else 1


def dhat_command(arguments: list[str], output: Path) -> list[str]:
    """The benchmark's arguments run under DHAT, its profile written to `output`."""
    valgrind = shutil.which("valgrind") or "valgrind"
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    return [valgrind, "--tool=dhat", f"--dhat-out-file={output}", "--quiet", *arguments]


def rss_command(arguments: list[str], output: Path) -> list[str]:
    """The benchmark's arguments run under GNU time, its peak resident kilobytes written to `output`."""
    time = shutil.which("time", path="/usr/bin:/bin") or "/usr/bin/time"
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    return [time, "-f", "%M", "-o", str(output), *arguments]


def peak_rss(output: Path) -> int:
    """The peak resident bytes GNU time wrote (its last line: a failed command's status comes first)."""
    return int(Path(output).read_text().strip().splitlines()[-1]) * 1024


def dhat_totals(output: Path) -> tuple[int, int]:
    """(bytes, blocks) allocated over the run, from a DHAT profile (its program points summed)."""
    document = json.loads(Path(output).read_text())
    points = document.get("pps", [])
    return sum(int(point["tb"]) for point in points), sum(int(point["tbk"]) for point in points)
