"""What the benchmarks ran on: CPU, cores, memory, Python and library versions.

Example::

    >>> from benchmarks.machine import describe
    >>> {"cpu", "cores", "memory", "python", "airflow"} <= set(describe())
    True
"""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def describe() -> dict[str, str]:
    """The machine and software versions, as short strings."""
    return {
        "cpu": _cpu_model(),
        "cores": f"{os.cpu_count()} ({usable_cores()} usable by this process)",
        "memory": _memory_gib(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "airflow": _version("apache-airflow"),
        "airflow-provider-namelookup": _version("airflow-provider-namelookup"),
        "httpx": _version("httpx"),
        "uvicorn": _version("uvicorn"),
    }


def summary_lines() -> list[str]:
    """The description as Markdown list lines."""
    return [f"- {name}: {value}" for name, value in describe().items()]
