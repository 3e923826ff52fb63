"""Starting the zygote: standard library only, so that it can happen before this process imports torch.

The zygote's start is mostly its `import torch` (about a second); the trusted side spends about as
long importing torch and pytest. `prestart()`, called by `grade.py` before anything heavy is
imported, launches the zygote at once so that the two imports run side by side on two cores; the
first `SandboxPool` with default options then adopts it (`claim`) instead of starting its own. A
prestarted zygote that nobody claims (`--help`, a usage error) is killed when this process exits.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from . import isolation

SANDBOX_PARENT = Path(__file__).resolve().parent.parent  # the folder that holds `sandbox/`

ALLOWED_IMPORTS = (
    "__future__", "abc", "array", "bisect", "cmath", "collections", "contextlib", "copy",
    "dataclasses", "decimal", "enum", "fractions", "functools", "heapq", "itertools", "math",
    "numbers", "numpy", "operator", "random", "statistics", "string", "time", "torch", "types",
    "typing", "warnings", "re",
)  # fmt: skip

BOOT = (
    "import sys, json; sys.path.insert(0, sys.argv[1]); import sandbox.zygote as z; del sys.path[0]; "
    "z.main(int(sys.argv[2]), json.loads(sys.argv[3]))"
)
PASSED_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")  # hardware workarounds, not secrets


class ZygoteStartFailed(Exception):
    """The zygote exited, or said something other than hello, before it was ready."""


class ZygoteLaunch:
    """A zygote process that has been started and may not have said hello yet."""

    def __init__(self, options: dict, boot_source: str = BOOT) -> None:
        self.options = dict(options, allowed_imports=list(ALLOWED_IMPORTS))
        self.tmp = tempfile.TemporaryDirectory(prefix="agw-zygote-")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {
            "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",  # one thread: the zygote must stay single-threaded to unshare
            # glibc's malloc keeps its own (dynamic) mmap threshold: freed blocks are reused, not
            # mapped and faulted in again on every allocation (a fixed 128 KiB threshold made large
            # tensors ~2x slower); `SandboxWorker.reset_peak` fixes it before it measures a call.
            **{k: os.environ[k] for k in PASSED_ENV if k in os.environ},
        }  # fmt: skip
        with open(os.path.join(self.tmp.name, "zygote.log"), "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-c", boot_source, str(SANDBOX_PARENT), str(theirs.fileno()),
                 json.dumps(self.options)],
                env=env,
                cwd=self.tmp.name,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                pass_fds=[theirs.fileno()],
                start_new_session=True,
            )  # fmt: skip
        theirs.close()
        self.control = ours
        self.hello: dict | None = None

    def handshake(self, timeout: float = 120) -> dict:
        """Wait for the zygote's hello (it has imported everything) and return it."""
        if self.hello is None:
            self.control.settimeout(timeout)
            try:
                hello = json.loads(self.control.recv(1 << 16) or b"null")
            except (OSError, json.JSONDecodeError) as exc:
                raise ZygoteStartFailed(f"{exc}; {self.log()}") from exc
            if not isinstance(hello, dict) or not hello.get("ready"):
                raise ZygoteStartFailed(self.log())
            self.hello = hello
        return self.hello

    def log(self) -> str:
        try:
            return Path(self.tmp.name, "zygote.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def kill(self, grace: float = 2.0) -> None:
        """End the zygote and everything it started, and remove its folder.

        A zygote that has said hello sees its control socket close and tidies up itself (kills its
        workers, sweeps their leftovers, removes their cgroups); it gets `grace` seconds for that
        before SIGKILL, which would leave its cgroups behind.
        """
        self.control.close()
        if self.hello is not None:
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.tmp.cleanup()


_prestarted: tuple[ZygoteLaunch, socket.socket] | None = None


def default_options(uid_block: int) -> dict:
    return {"run_as": None, "isolate": True, "userns": True, "uid_block": uid_block, "uid_start": 0}


_interrupts: list[int] = []


def defer_interrupts() -> None:
    """Note a Ctrl-C instead of raising it, until `take_interrupts`: raised in the middle of an
    import (pydantic's Rust core, torch), KeyboardInterrupt can come out as another exception, or
    leave a module half-imported."""
    signal.signal(signal.SIGINT, lambda signum, frame: _interrupts.append(signum))


def take_interrupts() -> bool:
    """Back to Python's own Ctrl-C handler; True when a Ctrl-C came while they were deferred."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    came = bool(_interrupts)
    _interrupts.clear()
    return came


def exit_now(status: int) -> None:
    """End this process with `status` once its work is done: the exit handlers run (an unused
    prestarted zygote, temporary folders, logging), the standard streams are flushed, and the
    interpreter's own teardown is skipped, which for a process that imported torch is ~0.4 s of
    taking modules apart that nobody needs."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def prestart() -> None:
    """Start a zygote with the default options now; the next default `SandboxPool` adopts it."""
    global _prestarted
    if _prestarted is None:
        block, holder = isolation.reserve_uid_block(int.from_bytes(os.urandom(4)) % isolation.UID_BLOCKS)
        _prestarted = (ZygoteLaunch(default_options(block)), holder)
        atexit.register(_discard)


def claim() -> tuple[ZygoteLaunch, socket.socket] | None:
    """The prestarted zygote and the holder of its uid block, once; None when there is none."""
    global _prestarted
    taken, _prestarted = _prestarted, None
    return taken


def _discard() -> None:
    taken = claim()
    if taken is not None:
        taken[0].kill()
        taken[1].close()
