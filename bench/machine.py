"""The machine a run was measured on: cores, CPU model, Python, the versions compared."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
from typing import Any

__all__ = ["SMTP_SOURCE", "describe", "machine"]

SMTP_SOURCE = "/usr/sbin/smtp-source"
SMTP_SINK = "/usr/sbin/smtp-sink"
_DISTRIBUTIONS = (
    "pytest-tempinbox",
    "aiosmtpd",
    "smtpdfix",
    "pytest-localserver",
    "pytest",
    "Django",
    "pytest-django",
)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine() -> dict[str, Any]:
    """Describe this machine and the software under test, for the JSON and the header."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "system": f"{platform.system()} {platform.release()}",
        "load_average_at_start": [round(load, 2) for load in os.getloadavg()],
        "versions": {name: _version(name) for name in _DISTRIBUTIONS},
        "smtp_source": SMTP_SOURCE if shutil.which(SMTP_SOURCE) else None,
        "smtp_sink": SMTP_SINK if shutil.which(SMTP_SINK) else None,
    }


def describe(info: dict[str, Any]) -> str:
    """One Markdown paragraph naming the machine and the versions measured."""
    versions = ", ".join(f"{name} {version}" for name, version in info["versions"].items())
    load = " ".join(str(load) for load in info["load_average_at_start"])
    return (
        f"Machine: {info['cpu_model']}, {info['cores']} cores ({info['usable_cores']} usable),"
        f" {info['system']}, {info['python']}; load average at start {load}.\n"
        f"Versions: {versions}."
    )
