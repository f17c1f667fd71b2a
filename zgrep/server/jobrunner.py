"""The daemon's job runner: one workspace's index jobs on a thread of their own, work that arrives
meanwhile coalesced into the next job (`service.Job.merge`), and the requests waiting on them
(`Waiter`) answered by the job that covers them. No worker waits for a job: a waiter's reply runs
when the job ends. A job silent for STALL_S is stuck: the impatient waiters (searches) are answered
busy, index requests wait on."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zgrep.progress import Progress, ProgressEvent
from zgrep.server import protocol
from zgrep.service import ErrorCode, Job, ZgError

log = logging.getLogger("zgrep.server.daemon")

STALL_S = 20.0  # a job that reported no progress this long is stuck: searches waiting on it are answered busy
MAX_WAITERS = 64  # requests waiting on one workspace's jobs; more are answered busy

if TYPE_CHECKING:
    Reply = Callable[[protocol.Reply], None]


class JobCancelled(ZgError):
    """An index job stopped at a batch boundary: the daemon is stopping or the workspace is gone."""


@dataclass
class Waiter:
    """A request waiting for the job that covers `generation`; `reply` gets that job's response
    once."""

    generation: int
    reply: Reply
    listener: list[bytes] | None = None  # its envelope, when it asked for progress events
    patient: bool = True  # an index request waits out a stuck job; a search is answered busy


@dataclass(frozen=True)
class JobState:
    """What `zg server status` shows of a workspace's jobs."""

    running: bool
    queued: bool
    done: int
    waiting: int
    silent_s: float


class JobRunner:
    """The index jobs of the workspace at `root`: `run(job, progress)` runs one and returns its
    response; `check()` raises JobCancelled when the workspace is gone; `send(envelope, msg)` queues
    a progress event; `ran(response)` hears every job's response."""

    def __init__(
        self,
        root: Path,
        run: Callable[[Job, Progress], protocol.Reply],
        check: Callable[[], None],
        send: Callable[[list[bytes], protocol.Reply], None],
        ran: Reply,
    ) -> None:
        self.root = root
        self.run = run
        self.check = check
        self.send = send
        self.ran = ran
        self.cond = threading.Condition()
        self.pending: Job | None = None
        self.requested = 0
        self.completed = 0
        self.running = False
        self.job_started = 0.0
        self.progressed = 0.0  # when the running job last reported progress
        self.jobs_done = 0
        self.waiters: list[Waiter] = []
        self.stopped = False

    def submit(
        self,
        work: Job,
        reply: Reply | None = None,
        listener: list[bytes] | None = None,
        patient: bool = True,
    ) -> None:
        """Queue index work (coalescing with what is pending: `Job.merge`); `reply` gets the
        response of the job that covers it (at once: busy, when MAX_WAITERS requests wait already).
        """
        with self.cond:
            if reply is not None and len(self.waiters) >= MAX_WAITERS:
                busy = protocol.error(
                    ErrorCode.WORKSPACE_BUSY,
                    f"{len(self.waiters)} requests wait for the index "
                    f"jobs of {self.root} (busy); retry once they end",
                )
            else:
                busy = None
                self.pending = work if self.pending is None else self.pending.merge(work)
                self.requested += 1
                if reply is not None:
                    self.waiters.append(Waiter(self.requested, reply, listener, patient))
                if not self.running:
                    self.running = True
                    self.job_started = self.progressed = time.monotonic()
                    threading.Thread(
                        target=self._loop, name=f"index {self.root.name}", daemon=True
                    ).start()
        if busy is not None and reply is not None:
            reply(busy)

    def busy(self) -> bool:
        with self.cond:
            return self.running

    def stalled_for(self) -> float:
        """Seconds the running job has gone without progress (0 when none runs)."""
        with self.cond:
            return time.monotonic() - self.progressed if self.running else 0.0

    def busy_error(self) -> protocol.Reply:
        return protocol.error(
            ErrorCode.WORKSPACE_BUSY,
            f"{self.root} is busy: its index job has reported no progress "
            f"for {self.stalled_for():.0f}s; retry once it ends (zg server status shows it), or "
            "search the index as it is with --refresh off",
        )

    def expire(self) -> None:
        """Answer the searches waiting on a job stuck for STALL_S: busy (index requests wait on)."""
        if self.stalled_for() < STALL_S:
            return
        with self.cond:
            impatient = [w for w in self.waiters if not w.patient]
            self.waiters = [w for w in self.waiters if w.patient]
        for waiter in impatient:
            waiter.reply(self.busy_error())

    def progress(self, event: ProgressEvent) -> None:
        """A job's progress: a cancellation point, then the event for every waiter that asked for
        it."""
        if self.stopped:
            raise JobCancelled(
                ErrorCode.SHUTTING_DOWN, "the daemon stopped the index job; run it again"
            )
        self.check()
        with self.cond:
            self.progressed = time.monotonic()
            listeners = [w.listener for w in self.waiters if w.listener is not None]
        for envelope in listeners:
            self.send(envelope, protocol.progress(event))

    def _loop(self) -> None:
        while True:
            with self.cond:
                work, self.pending = self.pending, None
                covered = self.requested
                if work is None or self.stopped:
                    self.running = False
                    self.cond.notify_all()
                    return
                self.progressed = time.monotonic()
            started = time.monotonic()
            response = self.run(work, self.progress)
            log.info(
                "index job %s: %s in %.2fs",
                self.root,
                "ok" if response["ok"] else response["error"]["code"],
                time.monotonic() - started,
            )
            with self.cond:
                self.completed = covered
                self.jobs_done += 1
                done = [w for w in self.waiters if w.generation <= covered]
                self.waiters = [w for w in self.waiters if w.generation > covered]
            for waiter in done:
                waiter.reply(response)
            self.ran(response)

    def stop(self, why: protocol.Reply) -> None:
        """Take no more work: the running job stops at its next batch, the waiters get `why`."""
        self.stopped = True
        with self.cond:
            self.pending = None
            waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            waiter.reply(why)

    def wait(self, deadline: float) -> bool:
        """Wait for a running job until `deadline` (monotonic); whether none runs any more."""
        with self.cond:
            while self.running and time.monotonic() < deadline:
                self.cond.wait(0.1)
            return not self.running

    def state(self) -> JobState:
        with self.cond:
            silent = time.monotonic() - self.progressed if self.running else 0.0
            return JobState(
                self.running, self.pending is not None, self.jobs_done, len(self.waiters), silent
            )
