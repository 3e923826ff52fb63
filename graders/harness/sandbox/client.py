"""The trusted side's handle on the sandbox: a zygote per grading process, a worker per submission.

`SandboxPool` starts the zygote (a fresh `python -I` with a cleared environment, never a fork of
this process) and asks it to fork workers. `SandboxWorker.request_raw` sends one frame and waits
for the reply under a wall-clock deadline and a CPU-time budget (read from `/proc/<pid>/stat`
here, where the submission cannot touch it); a worker that misses either, dies, or sends anything
malformed is killed (SIGKILL to its whole process group; it is PID 1 of its own PID namespace
when the kernel allows, so everything it started dies with it), the zygote sweeps up and reaps
whatever is left, and the caller gets a `SandboxFailure`.

`isolation_level(protections)` sums up what a worker ran under: "full" (root: namespaces, empty
root file system, own uid, cgroup), "partial" (ordinary user with user namespaces: namespaces and
empty root, same uid outside) or "minimal" (rlimits and the import allow-list only).
"""

from __future__ import annotations

import json
import os
import secrets
import select
import signal
import socket
import threading
import time
from dataclasses import dataclass, field

from . import isolation, wire
from .launch import ALLOWED_IMPORTS, BOOT, ZygoteLaunch, ZygoteStartFailed, claim, default_options

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
MAX_EVENTS_PER_REQUEST = 1000  # new event frames (a first tripwire hit) the worker may send before its reply
MAX_REPEATS_PER_REQUEST = 100_000  # repeats of a hit already kept (the worker sends every call; small frames)
MAX_TRIPWIRE_RECORD = 100  # tripwire hits a report names (the record itself keeps one per (module, entry))
TRIPWIRE_EVENT_KEYS = frozenset({"event", "module", "what", "line", "buffers"})

FULL = frozenset({
    "pid-namespace", "mount-namespace", "network-namespace", "empty-root", "unprivileged-uid",
    "no-new-privs", "rlimit:memory", "rlimit:processes", "import-allow-list", "seccomp-filter",
})  # fmt: skip
PARTIAL = frozenset({
    "pid-namespace", "mount-namespace", "network-namespace", "empty-root", "no-new-privs", "seccomp-filter",
})  # fmt: skip


def isolation_level(protections) -> str:
    """'full', 'partial' or 'minimal': the summary a report states next to the list."""
    have = set(protections)
    if not have:
        return "none"
    if FULL <= have:
        return "full"
    if PARTIAL <= have:
        return "partial"
    return "minimal"


def weakest_level(protection_lists) -> str:
    """The level of the least protected worker among several."""
    order = ["none", "minimal", "partial", "full"]
    levels = [isolation_level(p) for p in protection_lists]
    return min(levels, key=order.index) if levels else "none"


@dataclass(frozen=True)
class Limits:
    """Per-worker limits. Times in seconds, sizes in bytes.

    `memory_bytes` is what a worker may use *beyond* the zygote it is forked from (torch and
    everything imported before the fork): the limit of its memory cgroup as root, and otherwise
    added to the worker's own address space at fork time to give its RLIMIT_AS. It is never a
    fixed address-space size, so the same budget holds whichever torch build the zygote imported.
    """

    call_seconds: float = 120.0  # caps each exercise's own deadline (its manifest's call_seconds)
    # wall-clock budgets (see `budget`): an exercise's (None: 2 x its call deadline), a submission's
    exercise_seconds: float | None = None
    submission_seconds: float | None = 120.0
    call_cpu_seconds: float | None = None  # CPU budget of one call; None: the call's wall deadline
    cpu_seconds: int = 60
    memory_bytes: int = 2 << 30
    file_bytes: int = 1 << 20
    open_files: int = 64
    processes: int = 64
    output_bytes: int = 16 << 10
    reply_bytes: int = 64 << 20
    # Caps the trusted side sets on every reply, whatever the worker claims to apply (a reply over
    # one is the submission's fault): header bytes, JSON nesting, characters of any one string.
    reply_header_bytes: int = 4 << 20
    reply_depth: int = wire.MAX_HEADER_DEPTH
    reply_string_chars: int = wire.MAX_STRING_CHARS
    tmp_bytes: int = 16 << 20
    start_seconds: float = 10.0
    reap_seconds: float = 5.0

    def for_worker(self) -> dict:
        return {
            "memory_bytes": self.memory_bytes,
            "cpu_seconds": self.cpu_seconds,
            "file_bytes": self.file_bytes,
            "open_files": self.open_files,
            "processes": self.processes,
            "tmp_bytes": self.tmp_bytes,
        }


@dataclass(frozen=True)
class MemoryUse:
    """Memory of a worker as the kernel counts it, in bytes. `source`: "cgroup" (the worker and
    everything it started, pages shared with the zygote not counted) or "process" (its resident
    set, shared pages included). `failures`: allocations the cgroup refused (0 when unknown)."""

    usage: int
    peak: int
    failures: int
    source: str


@dataclass(frozen=True)
class PeakSpan:
    """The start of a span whose peak memory `SandboxWorker.peak_since` reports: the kernel's
    high-water mark was reset to the usage `baseline` (bytes) at its start. `source` as in
    `MemoryUse`; `fd` is the cgroup v2 `memory.peak` file whose reset is private to that descriptor."""

    baseline: int
    source: str
    fd: int | None = None


def _read_int(path: str) -> int:
    with open(path, "rb") as fh:
        return int(fh.read().split()[0])


def _read_failures(path: str | None) -> int:
    """memory.failcnt (v1), or the `max` and `oom_kill` counts of memory.events (v2)."""
    if path is None:
        return 0
    with open(path, "rb") as fh:
        data = fh.read()
    if path.endswith("failcnt"):
        return int(data.split()[0])
    counts = dict(line.split() for line in data.decode().splitlines() if line.strip())
    return int(counts.get("max", 0)) + int(counts.get("oom_kill", 0))


class SandboxFailure(Exception):
    """The worker could not give an answer: it timed out, crashed or broke the protocol."""

    kind = "crash"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class WorkerTimeout(SandboxFailure):
    kind = "timeout"


class WorkerCrashed(SandboxFailure):
    kind = "crash"


class WorkerProtocolError(SandboxFailure):
    kind = "protocol"


class WorkerOutOfMemory(SandboxFailure):
    """The worker was killed when its memory cgroup refused it more memory."""

    kind = "memory"


class WorkerMachineryFailed(SandboxFailure):
    """The sandbox's own code inside the worker failed (exit status `wire.MACHINERY_EXIT`), not a call."""

    kind = "sandbox"


class SandboxUnavailable(Exception):
    """The zygote itself could not be started or stopped answering: a grader-side failure."""


@dataclass
class CapturedOutput:
    """What a worker printed, by section, each kept up to `cap` bytes; the rest is counted and dropped.

    A section is named by the label the trusted side set before the requests that printed it
    (`SandboxWorker.label_output`: one worker serves every exercise of a submission, and each
    exercise's report shows what was printed while its own checks ran).
    """

    cap: int
    label: str = ""
    sections: dict[str, list] = field(default_factory=dict)  # label -> [bytearray, dropped]

    def feed(self, chunk: bytes) -> None:
        section = self.sections.setdefault(self.label, [bytearray(), 0])
        room = max(self.cap - len(section[0]), 0)
        section[0] += chunk[:room]
        section[1] += max(len(chunk) - room, 0)

    @property
    def data(self) -> bytes:
        return b"".join(bytes(s[0]) for s in self.sections.values())

    @property
    def dropped(self) -> int:
        return sum(s[1] for s in self.sections.values())

    def text(self, label: str | None = None) -> str:
        """Everything printed, or only what was printed under `label`."""
        data = self.data if label is None else bytes(self.sections.get(label, [b""])[0])
        return data.decode("utf-8", "replace")

    def dropped_in(self, label: str) -> int:
        return self.sections.get(label, [b"", 0])[1]


class SandboxPool:
    """One zygote, started lazily, from which every worker of this process is forked.

    `run_as=(uid, gid)` makes the zygote drop to that user once it has imported everything (how an
    installation without root, or a test of one, runs); `isolate=False` turns namespaces off and
    `userns=False` forbids user namespaces, to see what the lower isolation levels still hold.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        run_as: tuple[int, int] | None = None,
        isolate: bool = True,
        userns: bool = True,
        uid_block: int | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self._uid_holder = None
        self._launch: ZygoteLaunch | None = None  # the running zygote (possibly not ready yet)
        default = run_as is None and isolate and userns and uid_block is None
        prestarted = claim() if default and type(self).boot_source is SandboxPool.boot_source else None
        if prestarted is not None:  # started by `grade.py` while this process imported torch
            self._launch, self._uid_holder = prestarted
            uid_block = self._launch.options["uid_block"]
        elif uid_block is None:  # held for the pool's whole life: a zygote started again reuses no uid
            uid_block, self._uid_holder = isolation.reserve_uid_block(secrets.randbelow(isolation.UID_BLOCKS))
        self.options = default_options(uid_block)
        self.options.update(run_as=list(run_as) if run_as else None, isolate=isolate, userns=userns)
        self._lock = threading.Lock()
        self._unread: tuple[ZygoteLaunch | None, int] = (None, 0)  # answers to `release` not read yet
        self.zygote_pid: int | None = None
        self.mode: str | None = None  # "root", "userns" or "none", as the zygote found it
        self.footprint: int | None = None  # the zygote's address space after its imports, in bytes
        self._memory_verified: bool | None = None  # `provides_memory_budget`, measured once
        self.uid_block: int | None = None  # the block of uids its workers get (root mode)
        self._uid_next = 0  # the index in the block after the last uid a worker got

    def _ready(self) -> ZygoteLaunch:
        """The running zygote, started (or started again) if need be, once it has said hello."""
        if self._launch is None or self._launch.proc.poll() is not None:
            if self._launch is not None:
                self._launch.kill()
            self._launch = ZygoteLaunch(dict(self.options, uid_start=self._uid_next), self.boot_source())
        if self._launch.hello is None:
            try:
                hello = self._launch.handshake()
            except ZygoteStartFailed as exc:
                raise SandboxUnavailable(f"the sandbox zygote did not start: {exc}") from None
            self.zygote_pid = hello["pid"]
            self.mode = hello.get("mode", "none")
            self.footprint = hello.get("footprint") if type(hello.get("footprint")) is int else None
            self.uid_block = hello.get("uid_block")
        return self._launch

    def boot_source(self) -> str:
        """The `python -I -c` program the zygote starts with. A subclass may run something first,
        e.g. to stand in for a torch build with another footprint (tests/test_memory_limits.py)."""
        return BOOT

    def _ask(self, req: dict, fds: list[int] = ()) -> dict:
        with self._lock:
            launch = self._ready()
            control = launch.control
            try:
                self._catch_up(launch)
                _send(control, req, fds)
                return json.loads(control.recv(1 << 16))
            except (OSError, json.JSONDecodeError) as exc:
                self.close()
                raise SandboxUnavailable(f"the sandbox zygote stopped answering: {exc}") from exc

    def _catch_up(self, launch: ZygoteLaunch) -> None:
        """Read (and drop) the zygote's answers to `release`s before asking anything else: it
        answers in turn, so when this returns it has reaped and swept every released worker."""
        if self._unread[0] is launch:
            for _ in range(self._unread[1]):
                launch.control.recv(1 << 16)
        self._unread = (None, 0)

    def settle(self, timeout: float | None = None) -> None:
        """Wait until the zygote has reaped and swept every released worker (what it does before
        it forks another anyway): for a caller that looks at the process table now, or that is
        about to stop the zygote (`close`, which gives it `timeout` seconds)."""
        with self._lock:
            if self._launch is not None and self._unread[1]:
                if timeout is not None:
                    self._launch.control.settimeout(timeout)
                self._catch_up(self._launch)

    def release(self, pid: int) -> None:
        """Have the zygote reap worker `pid` (SIGKILLed already: see `SandboxWorker.release`) while
        this process goes on. Its account is read before the next request to the zygote, so the next
        worker is forked only after this one is gone and swept, as with `reap`, which waits for it:
        the wait (10-25 ms while the kernel takes a worker apart) now overlaps the report."""
        with self._lock:
            launch = self._launch
            if launch is None or launch.hello is None or launch.proc.poll() is not None:
                return  # no zygote: its workers went with it
            try:
                _send(launch.control, {"op": "reap", "pid": pid, "wait": self.limits.reap_seconds})
            except OSError:
                return  # a zygote that stopped listening is started again by the next `_ready`
            count = self._unread[1] if self._unread[0] is launch else 0
            self._unread = (launch, count + 1)

    def spawn(self, seed: int = 0) -> SandboxWorker:
        """Fork a fresh worker and wait for it to say it is ready."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_r, out_w = os.pipe()
        config = {"limits": self.limits.for_worker(), "seed": seed, "allowed_imports": list(ALLOWED_IMPORTS)}
        try:
            reply = self._ask({"op": "spawn", "config": config}, [theirs.fileno(), out_w])
        finally:
            theirs.close()
            os.close(out_w)
        if type(reply.get("pid")) is not int:
            ours.close()
            os.close(out_r)
            raise SandboxUnavailable(f"the sandbox could not start a worker: {reply.get('error', reply)}")
        if type(reply.get("uid")) is int and self.uid_block is not None:
            index = reply["uid"] - isolation.sandbox_uid(self.uid_block, 0)
            self._uid_next = max(self._uid_next, index + 1)
        worker = SandboxWorker(self, reply["pid"], ours, out_r)
        worker.cpu_file = reply.get("cpu_file") if isinstance(reply.get("cpu_file"), str) else None
        files = reply.get("memory_files")
        if isinstance(files, dict):
            worker.memory_files = {str(k): v for k, v in files.items() if isinstance(v, str)}
        try:
            hello = worker.request_raw(None, self.limits.start_seconds)[0]
        except SandboxFailure as exc:
            worker.close()
            worker._reader.join(1.0)
            raise SandboxUnavailable(
                f"a sandbox worker did not start ({exc}): {worker.output.text()[-1500:]}"
            ) from None
        if hello.get("ready") is not True or type(hello.get("protections")) is not list:
            worker.close()
            raise WorkerProtocolError("the worker did not say it was ready")
        names = [str(p) for p in hello["protections"] + reply.get("protections", [])]
        worker.protections = sorted(
            {*names, "import-allow-list", "output-cap", "wall-clock-deadline", "cpu-deadline"}
        )
        return worker

    def provides_memory_budget(self) -> bool:
        """Can a fresh worker of this pool really allocate (and touch) its memory budget?

        Asked only after a submission ran out of memory, to tell whose fault that was: when a fresh
        worker gets 90% of `Limits.memory_bytes`, the sandbox kept its promise and the submission
        needed more; when it does not, the machine or the grader's own limits are to blame (a limit
        that starves torch itself, a machine without that much free memory). Measured once per pool.
        """
        if self._memory_verified is None:
            size = int(self.limits.memory_bytes * 0.9)
            probe = f"import torch\n_block = torch.ones({size}, dtype=torch.uint8)\n".encode()
            try:
                worker = self.spawn()
            except (SandboxFailure, SandboxUnavailable):
                return False
            try:
                header = {"op": "load", "module": "_sandbox_probe", "filename": "<memory probe>"}
                reply, _ = worker.request_raw(header, self.limits.start_seconds * 3, [probe])
                self._memory_verified = reply.get("ok") is True
            except SandboxFailure:
                self._memory_verified = False
            finally:
                worker.close()
        return self._memory_verified

    def exit_status(self, pid: int, wait: float = 0.5) -> str:
        try:
            return self._ask({"op": "status", "pid": pid, "wait": wait})["status"]
        except SandboxUnavailable:
            return "unknown"

    def reap(self, pid: int, wait: float | None = None) -> dict:
        """SIGKILL worker `pid` and its whole tree, sweep what it left behind, collect the zombies."""
        wait = self.limits.reap_seconds if wait is None else wait
        try:
            return self._ask({"op": "reap", "pid": pid, "wait": wait})
        except SandboxUnavailable:
            return {"status": "unknown", "swept": 0, "left": -1}

    def close(self) -> None:
        """Kill the zygote and everything it started; nothing of this pool stays in its folder."""
        if self._launch is not None:
            try:  # a released worker is reaped first: the zygote then tidies up at once
                self.settle(timeout=self.limits.reap_seconds + 1.0)
            except OSError:
                self._unread = (None, 0)
            self._launch.kill()
            self._launch = None

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _send(control: socket.socket, req: dict, fds=()) -> None:
    """One request on the zygote's control socket (a SEQPACKET message, with descriptors)."""
    socket.send_fds(control, [json.dumps(req).encode()], list(fds))


EXIT_NAMES = {
    "signal:9": "killed (SIGKILL, probably a resource limit)",
    "signal:24": "stopped by the CPU-time limit (SIGXCPU)",
    "signal:25": "stopped by the file-size limit (SIGXFSZ)",
    "signal:11": "segmentation fault (SIGSEGV)",
    "signal:6": "aborted (SIGABRT)",
}


class SandboxWorker:
    """One forked worker: a socket for requests, a pipe for what it prints."""

    def __init__(self, pool: SandboxPool, pid: int, sock: socket.socket, out_fd: int) -> None:
        self.pool = pool
        self.pid = pid
        self.sock = sock
        self.alive = True
        self.protections: list[str] = []
        self.output = CapturedOutput(pool.limits.output_bytes)
        self._closed: dict | None = None
        self.cpu_file: str | None = None
        self.memory_files: dict[str, str] = {}  # the kernel's memory accounting of its cgroup, if any
        self._cpu_fd: int | None = None
        self._cpu_path = ""
        self.requests = 0  # sent so far
        self._nonce = 0  # the current request's: its reply must carry it
        # sent by the worker as they happen: the first hit of each (module, banned entry), in order
        self.tripwire_hits: dict[tuple[str | None, str], tuple[str | None, str, int]] = {}
        self._banned: dict[str, set[str]] = {}  # module -> the names its tripwire watches (from `load`)
        self._out_fd: int | None = out_fd
        self._out_lock = threading.Lock()
        os.set_blocking(out_fd, False)
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        """Feed what the worker prints into `output` until the pipe's last writer is gone.

        Only this thread closes the pipe; `label_output` reads from it too, under the same lock."""
        fd = self._out_fd
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while True:
            poller.poll()
            with self._out_lock:
                if self._read_pending():
                    continue
                self._out_fd = None
            os.close(fd)
            return

    def _read_pending(self) -> bool:
        """Read what is in the pipe now (caller holds `_out_lock`); False once it is at end of file."""
        while self._out_fd is not None:
            try:
                chunk = os.read(self._out_fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            self.output.feed(chunk)
        return False

    def label_output(self, label: str) -> None:
        """Attribute what the worker prints from now on to `label`. What it printed before a reply
        already received keeps the old label: its write to the pipe preceded the reply. What it
        printed before any label (while starting) goes to the first one."""
        with self._out_lock:
            self._read_pending()
            out = self.output
            if out.label == "" and "" in out.sections and label not in out.sections:
                out.sections[label] = out.sections.pop("")
            out.label = label

    def cpu_time(self) -> float | None:
        """CPU seconds used by the worker's cgroup (everything it started) or else by the worker itself.

        Read twice or more per request: the file stays open (`pread` at offset 0 regenerates it; an
        open+read+close cost ~15 us more each time) until `kill`."""
        if self._cpu_fd is None:
            for path in filter(None, (self.cpu_file, f"/proc/{self.pid}/stat")):
                try:
                    self._cpu_fd, self._cpu_path = os.open(path, os.O_RDONLY | os.O_CLOEXEC), path
                    break
                except OSError:
                    continue
            else:
                return None
        try:
            data = os.pread(self._cpu_fd, 4096, 0)
            if self._cpu_path.endswith("cpuacct.usage"):
                return int(data) / 1e9
            if self._cpu_path.endswith("cpu.stat"):
                return int(data.split(b"usage_usec", 1)[1].split()[0]) / 1e6
            return sum(int(f) for f in data.rsplit(b")", 1)[1].split()[11:15]) / CLOCK_TICKS
        except (OSError, ValueError, IndexError):
            return None

    def memory(self) -> MemoryUse | None:
        """What the kernel counts for this worker now: its cgroup (the whole tree) where it has one,
        else the worker process's own resident set (VmRSS, VmHWM). Never asked of the worker."""
        if self.memory_files:
            try:
                usage = _read_int(self.memory_files["usage"])
                peak = _read_int(self.memory_files["peak"]) if "peak" in self.memory_files else usage
                failures = _read_failures(self.memory_files.get("failures"))
                return MemoryUse(usage, peak, failures, "cgroup")
            except (OSError, ValueError, KeyError):
                pass
        return self._process_memory()

    def _process_memory(self) -> MemoryUse | None:
        """The worker process's own resident set now and at its high-water mark (VmRSS, VmHWM)."""
        try:
            with open(f"/proc/{self.pid}/status", "rb") as fh:
                fields = dict(line.split(b":", 1) for line in fh if b":" in line)
            kib = lambda key: int(fields[key].split()[0]) * 1024  # noqa: E731
            return MemoryUse(kib(b"VmRSS"), kib(b"VmHWM"), 0, "process")
        except (OSError, ValueError, KeyError, IndexError):
            return None

    def reset_peak(self) -> PeakSpan | None:
        """Reset the kernel's high-water mark of this worker's memory to what it uses now, from the
        trusted side (the worker sees no /proc): its cgroup's where it has one
        (v1 `memory.max_usage_in_bytes` takes "0"; v2 `memory.peak` takes a reset on one open
        descriptor, kernel 6.12 and later), else the worker process's own VmHWM (`clear_refs` 5).
        None when neither can be reset on this machine.

        The worker is first asked to set its heap up for the measurement (`prepare_heap`): workers
        run with glibc's dynamic mmap threshold, which keeps freed blocks for reuse, and a call could
        then reuse pages an earlier call left and seem to need less than it does; from here on the
        worker maps every block over 128 KiB afresh, and its heap's free pages are handed back."""
        self.prepare_heap()
        path = self.memory_files.get("peak")
        if path and "usage" in self.memory_files:
            try:
                if path.endswith("memory.max_usage_in_bytes"):
                    with open(path, "w") as fh:
                        fh.write("0")
                    return PeakSpan(_read_int(self.memory_files["usage"]), "cgroup")
                fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
                try:
                    os.write(fd, b"reset\n")
                    return PeakSpan(_read_int(self.memory_files["usage"]), "cgroup", fd)
                except OSError:
                    os.close(fd)
            except (OSError, ValueError):
                pass
        try:
            with open(f"/proc/{self.pid}/clear_refs", "w") as fh:
                fh.write("5")
        except OSError:
            return None
        use = self._process_memory()
        return None if use is None else PeakSpan(use.peak, "process")

    def prepare_heap(self) -> None:
        """Ask the worker to fix its mmap threshold and trim its heap (`isolation.prepare_heap_for_
        measurement`). Best effort: a worker that cannot answer is killed by `request_raw`, and the
        call measured next finds it gone and says so."""
        try:
            self.request_raw({"op": "prepare_heap"}, self.pool.limits.start_seconds)
        except SandboxFailure:
            pass

    def peak_since(self, span: PeakSpan) -> int | None:
        """Bytes by which the worker's memory peaked above `span.baseline` since `reset_peak`, as
        the kernel counts it (never as the worker reports it); None when it cannot be read."""
        try:
            if span.fd is not None:
                peak = int(os.pread(span.fd, 64, 0).split()[0])
            elif span.source == "cgroup":
                peak = _read_int(self.memory_files["peak"])
            else:
                use = self._process_memory()
                if use is None:
                    return None
                peak = use.peak
        except (OSError, ValueError, KeyError, IndexError):
            return None
        finally:
            if span.fd is not None:
                os.close(span.fd)
        return max(peak - span.baseline, 0)

    def _close_cpu_file(self) -> None:
        if self._cpu_fd is not None:
            os.close(self._cpu_fd)
            self._cpu_fd = None

    def _wait_readable(self, deadline: float, cpu_budget: float) -> None:
        """Wait for the first byte of the reply; raise `WorkerTimeout` past the wall or CPU budget."""
        start = self.cpu_time()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise wire.ChannelTimeout()
            ready, _, _ = select.select([self.sock], [], [], min(left, 0.05))
            if ready:
                return
            used = self.cpu_time()
            if start is not None and used is not None and used - start > cpu_budget:
                self.kill()
                raise WorkerTimeout(f"more than {cpu_budget:g} s of CPU time")

    def request_raw(
        self, header: dict | None, timeout: float, buffers: list[bytes] = ()
    ) -> tuple[dict, list[bytes]]:
        """Send `header` (or nothing, to read the hello frame) and return the validated reply frame."""
        if not self.alive:
            raise WorkerCrashed("the worker is no longer running")
        deadline = time.monotonic() + timeout
        cpu_budget = min(timeout, self.pool.limits.call_cpu_seconds or timeout)
        self.requests += 1
        # A random number per request, not a count: a reply is taken only with the number of the
        # request it answers, which the worker's loop holds in a local variable and student code
        # never sees, so a frame the submission wrote to the socket itself cannot pass for one.
        self._nonce = secrets.randbits(62)
        try:
            if header is not None:
                self.sock.settimeout(timeout)
                wire.send_frame(self.sock, dict(header, cpu=cpu_budget, nonce=self._nonce), buffers)
            if header is not None and header.get("op") == "load":
                self._banned[str(header.get("module"))] = {str(b) for b in header.get("banned") or []}
            limits = self.pool.limits
            events = repeats = 0
            while True:
                self._wait_readable(deadline, cpu_budget)
                reply, bufs = wire.recv_frame(
                    self.sock, deadline, limits.reply_bytes, max_header_bytes=limits.reply_header_bytes,
                    max_depth=limits.reply_depth, max_string_chars=limits.reply_string_chars,
                )  # fmt: skip
                if "event" not in reply:
                    break
                if self._event(reply, (header or {}).get("module")):
                    events += 1
                else:
                    repeats += 1
                if events > MAX_EVENTS_PER_REQUEST:
                    raise wire.WireError(f"more than {MAX_EVENTS_PER_REQUEST} event frames for one request")
                if repeats > MAX_REPEATS_PER_REQUEST:
                    raise wire.WireError(
                        f"more than {MAX_REPEATS_PER_REQUEST} calls of banned functions in one request"
                    )
            if header is not None and reply.get("nonce") != self._nonce:  # forged or stale: out of turn
                raise wire.WireError("a reply arrived out of turn")
            if header is not None and header.get("op") == "tripwire" and reply.get("ok") is True:
                reply["value"] = self.tripwire_report(header.get("target"), reply.get("value"))
            return reply, bufs
        except (wire.ChannelTimeout, TimeoutError) as exc:
            self.kill()
            raise WorkerTimeout(f"no answer within {timeout:g} s") from exc
        except wire.ChannelClosed as exc:
            memory = self.memory()  # before the zygote reaps the worker and removes its cgroup
            status = self.pool.exit_status(self.pid, wait=1.0)
            self.kill()
            if memory is not None and memory.source == "cgroup" and memory.failures > 0:
                raise WorkerOutOfMemory(EXIT_NAMES.get(status, status)) from exc
            if status == f"exited:{wire.MACHINERY_EXIT}":
                raise WorkerMachineryFailed(f"{status}: {self.output.text()[-800:]}") from exc
            raise WorkerCrashed(EXIT_NAMES.get(status, status)) from exc
        except (wire.WireError, OSError) as exc:
            self.kill()
            raise WorkerProtocolError(str(exc)) from exc

    def _event(self, frame: dict, asking: object = None) -> bool:
        """Keep a tripwire hit the worker sent as it happened (see `worker.Tripwire`); True when it
        is the first of its (module, banned entry), which is all the record keeps: the set of keys is
        bounded by the banned lists of the modules loaded, so no cap can drop a real hit. A tripwire
        frame that names a module not loaded, or a name no loaded module bans (nothing the tripwire
        watches would send it), was written by the submission itself: the call ends as its fault.

        A submission that read the interpreter's frames or object graph (see
        `worker.watch_introspection`) could have forged anything the worker sends after that: the
        call ends as the student's fault."""
        if frame.get("event") == "introspection":
            what, line = frame.get("what"), frame.get("line")
            where = f", line {line}" if type(line) is int and line > 0 else ""
            raise wire.WireError(
                f"your code read the interpreter's own state ({str(what)[:100]}{where}): the stack frames "
                "and object graph of the grader's process are not yours to read, and nothing it sends "
                "after that can be trusted"
            )
        if frame.get("event") != "tripwire":
            raise wire.WireError("unknown event frame")
        module, what, line = frame.get("module"), frame.get("what"), frame.get("line")
        if not (module is None or type(module) is str) or type(what) is not str or type(line) is not int:
            raise wire.WireError("malformed tripwire event")
        forged = frame.keys() != TRIPWIRE_EVENT_KEYS or frame.get("buffers") != []
        if forged or (module is not None and module not in self._banned):
            raise wire.WireError("a tripwire event the tripwire did not send (a frame your code wrote)")
        entries = sorted({b for banned in self._banned.values() for b in banned if wire.is_banned(what, [b])})
        if not entries:
            raise wire.WireError(
                f"a tripwire event naming {what[:100]!r}, which the tripwire does not watch"
                " (a frame your code wrote)"
            )
        # Counted for the module the worker names and for the one whose request was running (this
        # side's own knowledge): code of an exercise that lets the call through, run for one that
        # bans it, is that one's call, and nothing in the worker can move it elsewhere.
        first = False
        for who in dict.fromkeys([module, asking if asking in self._banned else module]):
            key = (who, entries[0])
            if key not in self.tripwire_hits:
                self.tripwire_hits[key] = (who, what[:200], line)
                first = True
        return first

    def tripwire_report(self, target, worker_says) -> list[list]:
        """The tripwire's record for the module `target` names, [[banned name, line], ...]: the hits
        this side received (calls from its code, or from no student code, of the names it bans),
        then whatever wrapper the worker says was undone. The worker's own list of hits is not read:
        code in the worker can erase it."""
        module = target.get("$module") if type(target) is dict else None
        banned = self._banned.get(str(module), set())
        mine = (module, None)
        hits = self.tripwire_hits.values()
        out = [[w, line] for who, w, line in hits if wire.is_banned(w, banned) and who in mine]
        for item in worker_says if type(worker_says) is list else []:
            if type(item) is list and item and type(item[0]) is str and item[0].endswith("(tripwire undone)"):
                out.append([item[0], 0])
        return out[:MAX_TRIPWIRE_RECORD]

    def kill(self) -> None:
        """SIGKILL the worker's process group now (the zygote's `reap` in `close` sweeps the rest)."""
        if not self.alive:
            return
        self.alive = False
        for kill in (os.killpg, os.kill):
            try:
                kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.sock.close()
        self._close_cpu_file()

    def close(self) -> dict:
        """Kill the worker and everything it started; return the zygote's account (status, swept, left)."""
        if self._closed is not None:
            return self._closed
        self.kill()
        self._closed = self.pool.reap(self.pid)
        return self._closed

    def release(self) -> None:
        """Kill the worker now and leave the rest to the zygote, without waiting for its account
        (`SandboxPool.release`): what a grading session does with a worker it is done with."""
        if self._closed is not None:
            return
        self.kill()
        self.pool.release(self.pid)
        self._closed = {"status": "released", "swept": 0, "left": 0}
