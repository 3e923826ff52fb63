"""The protections a sandboxed worker runs under, applied by the zygote and the freshly forked worker.

Three privilege modes, found once when the zygote starts (`probe_privilege`):

* ``root``: the grader runs as root. Each worker gets new PID, mount, network, IPC and UTS
  namespaces, an empty private root file system (a size-capped tmpfs holding only ``/tmp``, so
  ``reference/``, ``graders/``, the submission folders, ``/proc`` and the grader's temporary
  folders do not exist for it), its own cgroup (memory and process caps for the whole tree), its
  own unprivileged uid (``setgroups([])``, ``setresgid``, ``setresuid``) and ``NO_NEW_PRIVS``.
* ``userns``: an ordinary user on a kernel that allows user namespaces. The zygote enters a user
  namespace (it must be single-threaded then: OpenBLAS is started with one thread) and workers get
  the same namespaces and empty root, then drop every capability. They keep the user's uid outside
  the namespace, and no cgroup is made.
* ``none``: neither. Rlimits, a session of their own, and the zygote's sweep as child subreaper.

At every level the worker also loads a seccomp filter (`SeccompFilter`, `SECCOMP_DENIED`) once its
own set-up is done. Every function returns the names of the protections that took effect: they end
up in each report, so a report always says what it ran under. Imports: standard library only, and
`pyseccomp` (libseccomp's ctypes bindings), imported by the zygote before any worker is forked.

What the lower levels do not protect:

* ``userns`` ("partial"): the worker keeps the user's uid outside its namespaces, so a kernel
  bug that escaped the empty root would reach the user's files; there is no cgroup, so memory is
  capped per process (RLIMIT_AS) and processes per user (RLIMIT_NPROC, counted with the user's
  other processes), not for the worker's tree as a whole; CPU is charged per call to the worker
  process only (forked children are bounded by the wall deadline and their own RLIMIT_CPU).
* ``none`` ("minimal"): the worker sees the whole file system with the user's rights (it can read
  the reference if the user can), has the network, and shares the user's processes: ``kill(-1)``
  or ``kill(getppid())`` reach the grader. Only rlimits, the import allow-list, the deadlines, the
  output cap and the sweep of left-over processes hold. Grade untrusted code this way only inside
  a container or VM that is itself the boundary.
"""

from __future__ import annotations

import ctypes
import errno
import importlib
import os
import platform
import resource
import signal
import socket
import time

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAP_SYS_ADMIN = 21

_SYSCALLS = {  # (pivot_root, capset, capget)
    "x86_64": (155, 126, 125),
    "aarch64": (41, 91, 90),
}

SANDBOX_UID_BASE = 2_100_000_000  # far above any real account; one uid per worker, never reused
UID_BLOCK = 1 << 16  # uids of one block: a zygote numbers its workers' uids within the block it holds
UID_BLOCKS = (0xFFFF_FFFE - SANDBOX_UID_BASE) // UID_BLOCK
MAX_LIVE_WORKERS = 64

# What the seccomp filter refuses (EPERM) in every worker, at every isolation level: the kernel
# state that outlives a process or reaches past its namespaces. Keyrings (a key added to the user
# keyring survives the worker and is read by the next worker of that uid), new namespaces (user
# namespaces give a fresh set of capabilities: mounting cgroup2 showed host statistics), mounts,
# tracing and memory access to other processes, BPF, perf, userfaultfd and io_uring (the usual
# kernel attack surface), modules, kexec, clocks, swap, reboot.
SECCOMP_DENIED = (
    "add_key", "request_key", "keyctl",
    "unshare", "setns",
    "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
    "open_tree", "mount_setattr",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise",
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "uselib",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "vhangup",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
    "iopl", "ioperm", "modify_ldt",
)  # fmt: skip
# clone() is refused only with a namespace flag (threads and fork stay); clone3 hides its flags in
# memory a filter cannot read, so it says ENOSYS and the C library falls back to clone().
CLONE_NEWCGROUP = 0x02000000
CLONE_NAMESPACE_FLAGS = (
    CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP,
)  # fmt: skip

_libc = ctypes.CDLL(None, use_errno=True)


class IsolationError(OSError):
    pass


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise IsolationError(err, f"{what}: {os.strerror(err)}")


def prctl(option: int, arg: int = 0) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl({option})")


def _effective_caps() -> int:
    """This process's effective capability set, by `capget` (works without /proc)."""
    syscalls = _SYSCALLS.get(platform.machine())
    if syscalls is None:
        return -1
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    if _libc.syscall(syscalls[2], ctypes.byref(header), data) != 0:
        return -1
    return data[0].effective | data[1].effective << 32


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


# ---------------------------------------------------------------- the zygote's side


class SeccompFilter:
    """The filter of `SECCOMP_DENIED`, built once in the zygote (libseccomp through `pyseccomp`,
    imported before any fork: a worker's empty root holds no library) and loaded by each worker."""

    NAME = "seccomp-filter"

    def __init__(self) -> None:
        self._filter = None
        self.problem = ""
        try:
            sc = importlib.import_module("pyseccomp")
            filt = sc.SyscallFilter(sc.ALLOW)
            for name in SECCOMP_DENIED:
                try:
                    filt.add_rule(sc.ERRNO(errno.EPERM), name)
                except (OSError, ValueError):
                    pass  # a system call this kernel or architecture does not have
            for flag in CLONE_NAMESPACE_FLAGS:
                filt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
            filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
            self._filter = filt
        except (ImportError, RuntimeError, OSError) as exc:  # no pyseccomp, no libseccomp
            self.problem = f"{type(exc).__name__}: {exc}"

    def install(self) -> list[str]:
        """Load the filter into this process (and so into everything it starts); needs NO_NEW_PRIVS."""
        if self._filter is None:
            return []
        self._filter.load()
        return [self.NAME]


def reserve_uid_block(start: int) -> tuple[int, socket.socket]:
    """Reserve a block of sandbox uids for as long as the returned socket stays open.

    The reservation is an abstract unix socket named after the block: no file to leave behind, gone
    with its holder, and one holder per block machine-wide. A batch reserves one block per job for
    the whole run (`uid_block` of `SandboxPool`), so no uid serves two students of one run."""
    for i in range(UID_BLOCKS):
        block = (start + i) % UID_BLOCKS
        holder = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            holder.bind(f"\0agw-uid-block-{block}".encode())
            return block, holder
        except OSError:
            holder.close()
    raise IsolationError(errno.EUSERS, "every block of sandbox uids is taken")


def drop_to_user(uid: int, gid: int) -> None:
    """Become `uid`/`gid` for good (used to run the zygote as an ordinary user, e.g. in tests)."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    prctl(PR_SET_DUMPABLE, 1)  # as an ordinary process of that user: /proc/self stays its own


def probe_privilege(allow_userns: bool = True) -> str:
    """'root', 'userns' (this process is now root inside a new user namespace) or 'none'."""
    if os.geteuid() == 0 and _effective_caps() > 0 and _effective_caps() >> CAP_SYS_ADMIN & 1:
        return "root"
    if not allow_userns or _threads() != 1:  # unshare(CLONE_NEWUSER) needs a single thread
        return "none"
    uid, gid = os.geteuid(), os.getegid()
    if _libc.unshare(CLONE_NEWUSER) != 0:
        return "none"
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
        os.setresgid(0, 0, 0)
        os.setresuid(0, 0, 0)
    except OSError:
        return "none"
    return "userns"


def die_with_parent(sig: int) -> None:
    """Receive `sig` when the parent dies (PR_SET_PDEATHSIG), however it dies."""
    _libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(sig), 0, 0, 0)


def become_subreaper() -> bool:
    """Orphans of workers (daemons, double forks) are re-parented to this process, to be swept."""
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        return True
    except OSError:
        return False


def unshare_namespaces(mode: str, pid: bool = True) -> list[str]:
    """New namespaces for this (single-threaded) process; with `pid`, its next child is PID 1 of a new one."""
    if mode == "none":
        return []
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | (CLONE_NEWPID if pid else 0)
    _check(_libc.unshare(flags), "unshare")
    return ["mount-namespace", "network-namespace", "ipc-namespace"] + (["pid-namespace"] if pid else [])


def open_own_pid_namespace() -> int | None:
    try:
        return os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def unshare_pid_namespace() -> bool:
    """Root's fast path: the zygote's next child becomes PID 1 of a new PID namespace (one fork)."""
    return _libc.unshare(CLONE_NEWPID) == 0


def restore_pid_namespace(fd: int) -> None:
    """Point the zygote's later children back at its own PID namespace (after the fork)."""
    _check(_libc.setns(fd, CLONE_NEWPID), "setns")


MEMORY_FILES = {  # what the kernel counts for a memory cgroup: v1 names first, then v2
    "usage": ("memory.usage_in_bytes", "memory.current"),
    "peak": ("memory.max_usage_in_bytes", "memory.peak"),
    "failures": ("memory.failcnt", "memory.events"),
}


class Cgroup:
    """A cgroup per worker (root mode only): memory and process caps and CPU accounting on its whole tree.

    `cpu_file` (cpuacct.usage in v1, cpu.stat in v2) lets the trusted side charge a call for the
    CPU time of everything the worker started (threads, forked children), not only its own.
    """

    def __init__(self, name: str, memory_bytes: int, processes: int) -> None:
        self.dirs: list[str] = []
        self.applied: list[str] = []
        self.cpu_file: str | None = None
        self.memory_files: dict[str, str] = {}  # "usage", "peak", "failures" -> file (see MEMORY_FILES)
        for controller, files in (
            ("memory", {"memory.limit_in_bytes": memory_bytes, "memory.max": memory_bytes}),
            ("pids", {"pids.max": processes}),
            ("cpuacct", {}),
        ):
            base = _cgroup_dir(controller)
            if base is None:
                continue
            path = os.path.join(base, name)
            if path not in self.dirs:
                try:
                    os.mkdir(path)
                except OSError:
                    continue
                self.dirs.append(path)
            for fname, value in files.items():
                try:
                    with open(os.path.join(path, fname), "w") as fh:
                        fh.write(str(value))
                    self.applied.append(f"cgroup:{controller}")
                    break
                except OSError:
                    pass
            for fname in ("cpuacct.usage", "cpu.stat"):
                if self.cpu_file is None and os.path.exists(os.path.join(path, fname)):
                    self.cpu_file = os.path.join(path, fname)
                    self.applied.append("cgroup:cpu-accounting")
            if controller == "memory" and "cgroup:memory" in self.applied:
                for key, candidates in MEMORY_FILES.items():
                    found = [f for f in candidates if os.path.exists(os.path.join(path, f))]
                    if found:
                        self.memory_files[key] = os.path.join(path, found[0])

    def add(self, pid: int) -> bool:
        ok = bool(self.dirs)
        for path in self.dirs:
            try:
                with open(os.path.join(path, "cgroup.procs"), "w") as fh:
                    fh.write(str(pid))
            except OSError:
                ok = False
        return ok

    def remove(self, wait: float = 0.0) -> bool:
        """Remove the cgroup's directories, for up to `wait` s: a process still in one (a grandchild
        not yet swept) is killed, and the kernel may hold an emptied cgroup a moment longer. True
        when every directory is gone; call again later otherwise."""
        deadline = time.monotonic() + wait
        left = []
        for path in self.dirs:
            while True:
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        left.append(path)
                        break
                    _kill_members(path)
                    time.sleep(0.005)
        self.dirs = left
        return not left


def _kill_members(path: str) -> None:
    try:
        with open(os.path.join(path, "cgroup.procs")) as fh:
            pids = [int(line) for line in fh if line.strip()]
    except (OSError, ValueError):
        return
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


CGROUP_PREFIX = "agw-"


def cgroup_name(owner: int, serial: int) -> str:
    """A name no other zygote can hold: the owner's pid, a serial, and a random tag (pids get reused)."""
    return f"{CGROUP_PREFIX}{owner}-{serial}-{os.urandom(4).hex()}"


def sweep_stale_cgroups(min_age: float = 60.0) -> int:
    """Remove empty worker cgroups whose zygote is dead (it was SIGKILLed before it could tidy up).

    Only directories older than `min_age` seconds are touched, so a live zygote's cgroup in the
    instant between its creation and its first process is never taken; rmdir itself refuses any
    cgroup that still holds a process. Returns how many were removed.
    """
    removed, now = 0, time.time()
    for controller in ("memory", "pids", "cpuacct"):
        base = _cgroup_dir(controller)
        if base is None:
            continue
        try:
            entries = os.listdir(base)
        except OSError:
            continue
        for entry in entries:
            if not entry.startswith(CGROUP_PREFIX):
                continue
            owner = entry[len(CGROUP_PREFIX) :].split("-", 1)[0]
            path = os.path.join(base, entry)
            try:
                if not owner.isdigit() or _alive(int(owner)) or now - os.stat(path).st_mtime < min_age:
                    continue
                os.rmdir(path)
                removed += 1
            except OSError:
                pass
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _cgroup_dir(controller: str) -> str | None:
    """This process's own cgroup directory for `controller` (v1), or its v2 directory."""
    try:
        with open("/proc/self/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, names, path = line.split(":", 2)
        if controller in names.split(",") and names:
            candidate = f"/sys/fs/cgroup/{controller}{path}"
            if os.path.isdir(candidate):
                return candidate
    for line in lines:  # pure cgroup v2
        if line.startswith("0::"):
            candidate = "/sys/fs/cgroup" + line[3:]
            try:
                with open(os.path.join(candidate, "cgroup.controllers")) as fh:
                    if controller in fh.read().split():
                        return candidate
            except OSError:
                pass
    return None


# ---------------------------------------------------------------- the worker's side


def private_root(tmp_bytes: int) -> list[str]:
    """Replace the whole file system view by an empty tmpfs of `tmp_bytes` that holds only /tmp.

    After this the worker sees no project, no grader, no /proc, no interpreter files: it runs on
    what the zygote imported before the fork. `pivot_root` + a detached unmount of the old root
    leave nothing to escape back to.
    """
    syscalls = _SYSCALLS.get(platform.machine())
    if syscalls is None:
        return []
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    size = max(int(tmp_bytes), 1 << 20)
    opts = f"size={size},nr_inodes=4096,mode=755".encode()
    _check(_libc.mount(b"sandbox", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts), "mount tmpfs")
    os.mkdir("/tmp/.old", 0o700)
    _check(_libc.syscall(syscalls[0], b"/tmp", b"/tmp/.old"), "pivot_root")
    os.chdir("/")
    _check(_libc.umount2(b"/.old", MNT_DETACH), "umount old root")
    os.rmdir("/.old")
    os.mkdir("/tmp", 0o1777)
    os.chmod("/tmp", 0o1777)
    return ["empty-root", "private-tmp"]


def sandbox_uid(block: int, index: int) -> int:
    """The uid of the `index`-th worker a zygote holding uid block `block` forks."""
    return SANDBOX_UID_BASE + block * UID_BLOCK + index


def uid_block_of(uid: int) -> int | None:
    """The block a sandbox uid belongs to (None for any other uid)."""
    return (uid - SANDBOX_UID_BASE) // UID_BLOCK if uid >= SANDBOX_UID_BASE else None


def drop_privileges(mode: str, uid: int | None) -> list[str]:
    """Root: switch to `uid` with no groups. User namespace: drop every capability."""
    applied = []
    if mode == "root" and uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        applied.append("unprivileged-uid")
    elif mode == "userns":
        last = _last_cap()
        for cap in range(last + 1):
            try:
                prctl(PR_CAPBSET_DROP, cap)
            except OSError:
                pass
        _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        _clear_capabilities()
        applied.append("capabilities-dropped")
    if mode != "none" and _effective_caps() == 0:
        applied.append("no-capabilities")
    try:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        applied.append("no-new-privs")
    except OSError:
        pass
    return applied


def _last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return 40


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _clear_capabilities() -> None:
    syscalls = _SYSCALLS.get(platform.machine())
    if syscalls is None:
        return
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _check(_libc.syscall(syscalls[1], ctypes.byref(header), data), "capset")


def _set_limit(kind: int, value: int) -> None:
    soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def address_space_bytes() -> int | None:
    """The address space this process has mapped now (VmSize), or None where /proc cannot tell.

    Read in the freshly forked worker, before its root is emptied: it is the zygote's footprint
    after importing torch, which differs widely between builds (about 0.6 GiB for the CPU wheel,
    over 3 GiB for the CUDA wheel, which maps its libraries whether or not a GPU exists)."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def address_space_limit(memory_bytes: int, baseline: int | None, cgroup_memory: bool) -> int:
    """RLIMIT_AS for a worker that may use `memory_bytes` beyond the `baseline` it was forked with.

    Without a memory cgroup this limit is the memory limit, so it is the baseline plus the budget.
    With one, the cgroup counts what the worker really touches and this limit only stops absurd
    reservations (`torch.empty(1 << 40)`), so it leaves room for address space reserved but never
    used (allocator arenas, thread stacks). Never a fixed size: a fixed size that fits one torch
    build starves another (a 3 GiB limit left the CUDA wheel no room at all)."""
    headroom = 4 * memory_bytes if cgroup_memory else memory_bytes
    return (baseline or 0) + headroom


def apply_rlimits(limits: dict) -> list[str]:
    applied = []
    table = [
        ("memory", resource.RLIMIT_AS, limits.get("address_space_bytes")),
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


def reset_signals() -> None:
    for sig in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGXCPU):
        signal.signal(sig, signal.SIG_DFL)


def set_call_cpu_limit(seconds: float) -> None:
    """Lower the soft CPU limit to what this process has used plus `seconds` (SIGXCPU past it).

    The hard limit (the worker's total) stays, so the next call can raise the soft limit again.
    """
    try:
        used = resource.getrusage(resource.RUSAGE_SELF)
        spent = used.ru_utime + used.ru_stime
        _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        soft = int(spent + seconds) + 1
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):
        pass


M_MMAP_THRESHOLD = -3  # mallopt's parameter number (glibc's malloc.h)
MEASURED_MMAP_THRESHOLD = 128 << 10


def prepare_heap_for_measurement() -> bool:
    """Make the worker's resident memory follow what is live, before its peak memory is measured
    (see `client.SandboxWorker.reset_peak`). A worker starts with glibc's dynamic mmap threshold,
    which keeps freed blocks for reuse (large tensors are about twice as fast to allocate); from
    here on, every block over 128 KiB is mapped when allocated and unmapped when freed (a fixed
    threshold, as `MALLOC_MMAP_THRESHOLD_=131072` would set), and the heap's free pages go back to
    the kernel now (`malloc_trim(0)`). False where the C library has neither."""
    mallopt, trim = getattr(_libc, "mallopt", None), getattr(_libc, "malloc_trim", None)
    if mallopt is None or trim is None:
        return False
    mallopt(M_MMAP_THRESHOLD, MEASURED_MMAP_THRESHOLD)
    trim(ctypes.c_size_t(0))
    return True
