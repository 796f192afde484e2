"""The standalone process's own limits: its open files raised, the kernel's backlog cap read.

Standard library only; the command line calls these at start (``--verbose``
says what they found). The plugin never changes its process's limits.
"""

from __future__ import annotations

__all__ = ["raise_open_files_limit", "somaxconn"]


def raise_open_files_limit() -> str:
    """Raise the soft limit of open files to the hard one; say what was done.

    Each connection is a descriptor, and the common soft limit of 1,024 is less
    than a shared server holds. The plugin never does this: the test process's
    limits are the test run's.
    """
    try:
        import resource
    except ImportError:  # Windows: no such limit to raise
        return "open files: no RLIMIT_NOFILE on this platform"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:  # macOS: the kernel's own cap applies
        hard = max(soft, 1 << 20)
    if soft == resource.RLIM_INFINITY or soft >= hard:
        return f"open files: soft limit {soft}, already the hard limit"
    try:
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (hard, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
        )
    except (ValueError, OSError) as exc:
        return f"open files: soft limit {soft} kept, cannot raise it to {hard}: {exc}"
    return f"open files: soft limit raised from {soft} to {hard} (the hard limit)"


def somaxconn() -> str:
    """What Linux caps a listen backlog at, as the verbose start says it."""
    try:
        with open("/proc/sys/net/core/somaxconn", encoding="ascii") as file:
            return f"the kernel caps it at net.core.somaxconn = {int(file.read())}"
    except (OSError, ValueError):
        return "the system may cap it lower"
