"""Protections a freshly forked worker applies to itself before it runs any student code.

Each protection that took effect is named in the list `enter` returns, so every report can state
the isolation level it ran under. Imports: standard library only.
"""

from __future__ import annotations

import os
import resource
import signal


def _set_limit(kind: int, value: int) -> None:
    soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def apply_rlimits(limits: dict) -> list[str]:
    applied = []
    table = [
        ("memory", resource.RLIMIT_AS, limits.get("memory_bytes")),
        ("cpu", resource.RLIMIT_CPU, limits.get("cpu_seconds")),
        ("file_size", resource.RLIMIT_FSIZE, limits.get("file_bytes")),
        ("open_files", resource.RLIMIT_NOFILE, limits.get("open_files")),
        ("processes", resource.RLIMIT_NPROC, limits.get("processes")),
        ("core_dumps", resource.RLIMIT_CORE, 0),
    ]
    for name, kind, value in table:
        if value is None:
            continue
        try:
            _set_limit(kind, int(value))
            applied.append(f"rlimit:{name}")
        except (ValueError, OSError):
            pass
    return applied


def enter(config: dict) -> list[str]:
    """Apply every protection this process can; return the names of those that took effect."""
    for sig in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    protections = ["fresh-interpreter", "own-process-group"]
    protections += apply_rlimits(config.get("limits", {}))
    return protections
