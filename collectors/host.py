"""Facts about the machine a measurement was taken on, recorded with each run."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def host_facts() -> dict[str, object]:
    model = ""
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {
        "host": platform.node(),
        "cpu_model": model,
        "cpus": os.cpu_count() or 0,
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") or "unknown",
        "aslr": _read("/proc/sys/kernel/randomize_va_space") or "unknown",
        "load_1min": os.getloadavg()[0],
        "kernel": platform.release(),
    }
