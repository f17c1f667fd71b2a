"""The daemon's transport: its ZeroMQ ROUTER socket (an ipc socket file 0600), the inproc PUSH/PULL
pair worker threads queue their replies on (the main loop alone touches the ROUTER), and the checks
every message passes before it is a request: one frame after an optional empty delimiter, the size
limit, the protocol's validation, and the token (compared in constant time). Rejections are answered
here."""

from __future__ import annotations

import errno
import hmac
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import zmq

from zgrep.server import protocol
from zgrep.service import ErrorCode

log = logging.getLogger("zgrep.server.daemon")

REPLIES = "inproc://zgrep-replies"

if TYPE_CHECKING:
    Admit = Callable[[list[bytes], protocol.Request], protocol.Reply | None]


class Transport:
    """The ROUTER bound to `endpoint` (`endpoint` then names what it is bound to) and the replies'
    pair."""

    def __init__(self, endpoint: str, token: str) -> None:
        self.token = token
        self.ctx = zmq.Context()
        self.router = self.ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        self.router.setsockopt(zmq.MAXMSGSIZE, protocol.MAX_MESSAGE_BYTES)
        self.router.bind(endpoint)
        self.endpoint: str = self.router.getsockopt_string(zmq.LAST_ENDPOINT)
        if self.endpoint.startswith("ipc://"):
            os.chmod(self.endpoint[len("ipc://") :], 0o600)
        self.replies = self.ctx.socket(zmq.PULL)
        self.replies.bind(REPLIES)
        self.local = threading.local()
        self.poller = zmq.Poller()
        self.poller.register(self.router, zmq.POLLIN)
        self.poller.register(self.replies, zmq.POLLIN)
        self.heard = time.monotonic()  # when the last message arrived

    def send(self, envelope: list[bytes], msg: protocol.Reply) -> None:
        """Queue a reply from any thread (the main loop forwards it to the ROUTER)."""
        push = getattr(self.local, "push", None)
        if push is None:
            push = self.local.push = self.ctx.socket(zmq.PUSH)
            push.setsockopt(zmq.LINGER, 1000)
            push.connect(REPLIES)
        push.send_multipart([*envelope, protocol.encode(msg)])

    def pump(self, timeout_ms: int, admit: Admit, stopping: threading.Event) -> None:
        """Wait up to `timeout_ms` for traffic: forward the queued replies, and give each request
        that passes the checks to `admit(envelope, request)`, which answers it (a reply) or takes it
        (None); stop reading once `stopping` is set."""
        try:
            events = dict(self.poller.poll(timeout_ms))
        except zmq.ZMQError as exc:  # EINTR from a signal: the caller's loop condition decides
            if exc.errno != errno.EINTR:
                raise
            return
        if self.replies in events:
            self.forward(0)
        if self.router in events:
            while not stopping.is_set() and self.router.poll(0):
                self.heard = time.monotonic()
                self.receive(self.router.recv_multipart(), admit)

    def forward(self, timeout_ms: int) -> None:
        """Send the queued replies to the ROUTER, waiting up to `timeout_ms` for each."""
        while self.replies.poll(timeout_ms):
            self.router.send_multipart(self.replies.recv_multipart())

    def receive(self, frames: list[bytes], admit: Admit) -> None:
        """Check one message and answer it here (every rejection, or `admit`'s reply) unless `admit`
        took it."""
        envelope = frames[:-1]
        if not envelope:
            return
        try:
            reply = self.checked(frames, admit)
        except protocol.ProtocolError as exc:
            log.warning("rejected a request: %s", exc.code)
            reply = protocol.error(exc.code, str(exc))
        except Exception as exc:  # a bug must cost one request, not the daemon
            log.exception("a request failed before reaching a worker")
            reply = protocol.error(
                ErrorCode.INTERNAL, f"{type(exc).__name__} while reading the request"
            )
        if reply is not None:
            self.router.send_multipart([*envelope, protocol.encode(reply)])

    def checked(self, frames: list[bytes], admit: Admit) -> protocol.Reply | None:
        """Validate a message (shape, size, fields, token), then `admit` it."""
        if sum(len(f) for f in frames) > protocol.MAX_MESSAGE_BYTES:
            raise protocol.ProtocolError(
                ErrorCode.TOO_LARGE, f"message exceeds the {protocol.MAX_MESSAGE_BYTES}-byte limit"
            )
        if len(frames) > 3 or (len(frames) == 3 and frames[1]):
            raise protocol.ProtocolError(
                ErrorCode.MALFORMED, "a request is one frame (after an optional empty delimiter)"
            )
        request = protocol.decode_request(frames[-1])
        if not hmac.compare_digest(request.get("token", "").encode(), self.token.encode()):
            log.warning("rejected a request with a wrong token")
            return protocol.error(
                ErrorCode.UNAUTHORIZED,
                "wrong or missing token (the daemon was restarted? run the command again)",
            )
        return admit(frames[:-1], request)

    def close(self) -> None:
        self.router.close(0)
        self.replies.close(0)
