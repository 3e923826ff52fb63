"""The sandbox pool of a batch job: a ready worker waiting for the next submission, cleanup off the hot path.

A batch grades every submission of a class with the same seed, so a submission's worker is forked
with the same configuration every time (the seed of the first exercise it loads; after a failure
the replacement gets the failing exercise's seed). `BatchPool` keeps one spare worker per seed,
forked by a helper thread while the current submission is being graded, and hands it out on the
next `spawn(seed)`. A spare is a worker that has never run anything: it is exactly what a fresh
`spawn` would return, only earlier. Retiring a worker stays immediate (SIGKILL to its process
group, in `SandboxWorker.kill`); only the zygote's bookkeeping afterwards (`reap`: collect the
exit status, sweep leftovers, free the uid and cgroup) is left to the zygote without waiting
(`SandboxPool.release`), as for any pool.

`kill_all` is for the job's SIGTERM handler: it SIGKILLs every live worker, spare or not, and the
zygote, taking no lock.
"""

from __future__ import annotations

import os
import queue
import select
import signal
import threading
import weakref

from ..sandbox.client import Limits, SandboxPool, SandboxWorker


class BatchPool(SandboxPool):
    def __init__(self, limits: Limits | None = None, uid_block: int | None = None) -> None:
        super().__init__(limits, uid_block=uid_block)
        self.live: weakref.WeakSet[SandboxWorker] = weakref.WeakSet()
        self._spares: dict[int, SandboxWorker] = {}
        self._spares_lock = threading.Lock()
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._helper = threading.Thread(target=self._serve, name="batch-pool", daemon=True)
        self._helper.start()

    def warm(self) -> None:
        """Start the zygote and fork one throw-away worker, so the first submission is not slower."""
        SandboxPool.spawn(self).close()

    # ------------------------------------------------------------ workers

    def spawn(self, seed: int = 0) -> SandboxWorker:
        with self._spares_lock:
            worker = self._spares.pop(seed, None)
        if worker is not None and not _untouched(worker):
            worker.close()
            worker = None
        if worker is None:
            worker = super().spawn(seed)
            self.live.add(worker)
        self._tasks.put(("spare", seed))
        return worker

    def reap(self, pid: int, wait: float | None = None) -> dict:
        """Leave the zygote's cleanup of a worker already SIGKILLed by `SandboxWorker.kill` to it,
        without waiting (`SandboxPool.release`: read before the next request to the zygote)."""
        self.release(pid)
        return {"status": "queued", "swept": 0, "left": 0}

    def _serve(self) -> None:
        while (task := self._tasks.get()) is not None:
            try:
                seed = task[1]
                with self._spares_lock:
                    if seed in self._spares:
                        continue
                worker = super().spawn(seed)
                self.live.add(worker)
                with self._spares_lock:
                    self._spares[seed] = worker
            except Exception:  # noqa: BLE001 - no spare this time: spawn() forks one when asked
                continue

    # ------------------------------------------------------------ shutdown

    def close(self) -> None:
        """Stop the zygote (also called by the base class when it stops answering); spares go with it."""
        with self._spares_lock:
            spares, self._spares = list(self._spares.values()), {}
        for worker in spares:
            worker.kill()
        super().close()

    def shutdown(self) -> None:
        """The end of the job: stop the helper thread, then the zygote."""
        self._tasks.put(None)
        if threading.current_thread() is not self._helper:
            self._helper.join(timeout=5)
        self.close()

    def kill_all(self) -> None:
        """SIGKILL live workers and the zygote. Safe in a signal handler: no lock, no wait, no I/O."""
        pids = [w.pid for w in list(self.live) if w.alive] + ([self.zygote_pid] if self.zygote_pid else [])
        for pid in pids:
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


def _untouched(worker: SandboxWorker) -> bool:
    """A spare that is still alive and has sent nothing since its hello (no EOF, no stray bytes)."""
    if not worker.alive:
        return False
    readable, _, _ = select.select([worker.sock], [], [], 0)
    return not readable
