"""A ZeroMQ DEALER peer in the standard library: ZMTP 3 with the NULL mechanism, over the daemon's
ipc:// or tcp:// endpoint. The thin client talks to the daemon's ROUTER through it, so a command
imports no pyzmq (about 30 ms of every `zg` call); the daemon keeps pyzmq.

Wire format (https://rfc.zeromq.org/spec/23/): a 64-byte greeting each way, a READY command each
way, then frames of a flags byte (MORE 1, LONG 2, COMMAND 4), a 1- or 8-byte big-endian size and the
body."""

from __future__ import annotations

import _socket  # the socket type itself: `import socket` also builds enums of every constant (~15M instructions)
import select
import struct
import time

MORE, LONG, COMMAND = 1, 2, 4
GREETING = (
    b"\xff" + bytes(8) + b"\x7f" + bytes([3, 0]) + b"NULL".ljust(20, b"\0") + b"\0" + bytes(31)
)
# far above the protocol's message cap: a peer claiming more is not a daemon
MAX_FRAME = 64 * 1024 * 1024


class PeerError(ConnectionError):
    """The endpoint refused the connection, closed it, or does not speak ZMTP 3 with the NULL
    mechanism."""


def frame(body: bytes, flags: int = 0) -> bytes:
    """One ZMTP frame: flags (LONG added for bodies over 255 bytes), size, body."""
    if len(body) > 255:
        return struct.pack(">BQ", flags | LONG, len(body)) + body
    return struct.pack(">BB", flags, len(body)) + body


def ready_command(socket_type: bytes) -> bytes:
    """The NULL mechanism's READY command announcing `socket_type`."""
    prop = b"Socket-Type"
    return frame(
        b"\x05READY"
        + bytes([len(prop)])
        + prop
        + struct.pack(">I", len(socket_type))
        + socket_type,
        COMMAND,
    )


def connect(endpoint: str, timeout_s: float) -> _socket.socket:
    """A connected stream socket to `endpoint` (ipc://PATH, ipc://@ABSTRACT or tcp://HOST:PORT)."""
    scheme, _, rest = endpoint.partition("://")
    try:
        if scheme == "ipc":
            sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            sock.settimeout(timeout_s)
            try:
                sock.connect("\0" + rest[1:] if rest.startswith("@") else rest)
            except BaseException:
                sock.close()
                raise
            return sock
        if scheme == "tcp":
            import socket  # its name resolution, for tcp:// endpoints only

            host, _, port = rest.rpartition(":")
            return socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s)
    except (OSError, ValueError) as exc:
        raise PeerError(f"cannot connect to {endpoint}: {exc}") from None
    raise PeerError(f"unsupported endpoint {endpoint!r}")


class Dealer:
    """One connection to a ROUTER: send multipart messages, receive them with a timeout. Our
    greeting goes out at once; READY and what was sent meanwhile follow the peer's greeting (libzmq
    drops a connection whose READY arrives with the greeting), read inside recv(), so nothing here
    blocks on a peer that accepted the connection but does not run (stopped): the caller's receive
    loop decides."""

    def __init__(self, endpoint: str, timeout_s: float) -> None:
        self.endpoint = endpoint
        self.sock = connect(endpoint, timeout_s)
        self.buf = bytearray()
        # until the peer has greeted
        self.outbox: bytearray | None = bytearray(ready_command(b"DEALER"))
        self.ready = False
        try:
            self.sock.sendall(GREETING)
        except OSError as exc:
            self.close()
            raise PeerError(f"cannot greet {endpoint}: {exc}") from None

    def send(self, frames: list[bytes]) -> None:
        """Send one multipart message (held back until the handshake allows it)."""
        last = len(frames) - 1
        data = b"".join(frame(body, 0 if i == last else MORE) for i, body in enumerate(frames))
        if self.outbox is not None:
            self.outbox += data
        else:
            self.sock.sendall(data)

    def recv(self, timeout_s: float) -> list[bytes] | None:
        """The next message, or None when none completes within `timeout_s` (what arrived stays
        buffered)."""
        deadline = time.monotonic() + timeout_s
        while (message := self._next()) is None:
            if not self._fill(deadline):
                return None
        return message

    def _next(self) -> list[bytes] | None:
        """The next whole message in the buffer, after the peer's greeting and READY; None while
        incomplete."""
        if self.outbox is not None:
            if len(self.buf) < len(GREETING):
                return None
            greeting = bytes(self.buf[: len(GREETING)])
            del self.buf[: len(GREETING)]
            if (
                greeting[0] != 0xFF
                or greeting[9] != 0x7F
                or greeting[10] < 3
                or greeting[12:16] != b"NULL"
            ):
                raise PeerError(f"{self.endpoint} does not speak ZMTP 3 with the NULL mechanism")
            self.sock.sendall(self.outbox)
            self.outbox = None
        while (found := self._scan()) is not None:
            is_command, parts = found
            if not is_command and self.ready:
                return parts
            if not is_command or parts[0].startswith(b"\x05ERROR"):
                raise PeerError(f"{self.endpoint} broke the ZMTP handshake")
            self.ready = self.ready or parts[0].startswith(b"\x05READY")
        return None

    def _scan(self) -> tuple[bool, list[bytes]] | None:
        """Take one complete message (or command) off the buffer: (is_command, bodies); None while
        incomplete."""
        at, parts, buf = 0, [], self.buf
        while True:
            if len(buf) < at + 2:
                return None
            flags = buf[at]
            head = 9 if flags & LONG else 2
            if len(buf) < at + head:
                return None
            size = struct.unpack_from(">Q", buf, at + 1)[0] if flags & LONG else buf[at + 1]
            if size > MAX_FRAME:
                raise PeerError(f"the peer announced a frame of {size} bytes")
            if len(buf) < at + head + size:
                return None
            parts.append(bytes(buf[at + head : at + head + size]))
            at += head + size
            if flags & COMMAND or not flags & MORE:
                del buf[:at]
                return bool(flags & COMMAND), parts

    def _fill(self, deadline: float) -> bool:
        """Read what the peer sent, waiting until `deadline`; False when nothing came in time."""
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([self.sock], [], [], wait)[0]:
            return False
        data = self.sock.recv(1 << 20)
        if not data:
            raise PeerError("the peer closed the connection")
        self.buf += data
        return True

    def close(self) -> None:
        self.sock.close()
