"""Measurement helpers shared by the benchmark scripts (run as ``python benchmarks/X.py``)."""

from __future__ import annotations

import resource
from pathlib import Path


def peak_rss_mb() -> float:
    """VmHWM of this process (ru_maxrss survives exec on Linux and would report the parent's peak)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
