"""The client's own ZMTP peer (zgrep.server.zmtp) against libzmq's ROUTER, and against endpoints that are no
daemon: a wrong greeting, silence, a frame announcing petabytes. Each ends in DaemonLost, never a hang."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import zmq

from zgrep.server import client, protocol, zmtp


def router(
    endpoint: str,
    answer: Callable[[bytes], list[bytes]],
    heard: list[tuple[bytes, bytes]] | None = None,
) -> Iterator[None]:
    """A libzmq ROUTER on `endpoint` answering each request with `answer(payload)` (several messages allowed),
    each request's (peer identity, payload) appended to `heard`."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind(endpoint)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            if sock.poll(50):
                frames = sock.recv_multipart()
                if heard is not None:
                    heard.append((frames[0], frames[-1]))
                for reply in answer(frames[-1]):
                    sock.send_multipart([frames[0], b"", reply])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        sock.close(0)
        ctx.term()


def test_round_trip_with_libzmq_long_frames_and_progress(tmp_path: Path) -> None:
    endpoint = f"ipc://{tmp_path}/r.sock"
    big = "x" * 3_000_000  # LONG frames both ways

    def answer(payload: bytes) -> list[bytes]:
        request = protocol.decode_request(payload)
        return [
            protocol.encode(protocol.progress({"done": 1})),
            protocol.encode(protocol.ok({"echo": request["args"]["queries"][0]})),
        ]

    events: list[dict[str, object]] = []
    gen = router(endpoint, answer)
    next(gen)
    try:
        for _ in range(3):  # a fresh connection each time, as each command makes
            reply = client.exchange(
                endpoint,
                protocol.make_request("search", "/", {"queries": [big]}),
                20,
                on_progress=events.append,
            )
            assert reply["ok"] and reply["result"]["echo"] == big
    finally:
        gen.close()
    assert events == [{"done": 1}] * 3


def fake_peer(path: Path, behave: Callable[[socket.socket], None]) -> threading.Thread:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)

    def run() -> None:
        conn, _ = srv.accept()
        try:
            behave(conn)
        finally:
            conn.close()
            srv.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    "behave",
    [
        lambda c: c.sendall(b"HTTP/1.1 200 OK\r\n" + b"x" * 100),  # not ZMTP
        lambda c: c.recv(64),  # reads the greeting, answers nothing, hangs up
        lambda c: (
            c.recv(64),
            c.sendall(zmtp.GREETING + zmtp.ready_command(b"ROUTER")),
            c.sendall(struct.pack(">BQ", zmtp.LONG, 1 << 60)),
            c.recv(1 << 16),
        ),  # a frame of 1 EiB
    ],
    ids=["not-zmtp", "hangs-up", "huge-frame"],
)
def test_an_endpoint_that_is_no_daemon_is_lost_not_waited_on(
    tmp_path: Path, behave: Callable[[socket.socket], None]
) -> None:
    path = tmp_path / "fake.sock"
    thread = fake_peer(path, behave)
    with pytest.raises(client.DaemonLost):
        client.exchange(f"ipc://{path}", protocol.make_request("ping", None), 10)
    thread.join(10)


def test_a_silent_peer_times_out_and_a_missing_one_is_unreachable(tmp_path: Path) -> None:
    path = tmp_path / "silent.sock"
    done = threading.Event()
    thread = fake_peer(path, lambda c: done.wait(10))
    with pytest.raises(client.DaemonLost, match="no answer"):
        client.exchange(f"ipc://{path}", protocol.make_request("ping", None), 0.3)
    done.set()
    thread.join(10)
    with pytest.raises(client.DaemonLost, match="could not reach"):
        client.exchange(f"ipc://{tmp_path}/absent.sock", protocol.make_request("ping", None), 1)


def test_a_request_carrying_the_probe_is_one_connection_and_unanswered_without_a_pong(
    tmp_path: Path,
) -> None:
    """With `probe_s`, a ping goes ahead of the request on the same connection: the request's reply is
    returned once the ping is answered; a daemon answering neither within `probe_s` is Unanswered (a failed
    probe), not waited on for the request's deadline."""
    endpoint = f"ipc://{tmp_path}/p.sock"
    silent = threading.Event()

    def answer(payload: bytes) -> list[bytes]:
        request = protocol.decode_request(payload)
        if silent.is_set():
            return []
        if request["op"] == "ping":
            return [protocol.encode(protocol.ok({"pong": True}))]
        return [protocol.encode(protocol.ok({"echo": request["args"]["queries"][0]}))]

    heard: list[tuple[bytes, bytes]] = []
    gen = router(endpoint, answer, heard)
    next(gen)
    search = protocol.make_request("search", "/", {"queries": ["retry"]})
    try:
        reply = client.exchange(endpoint, search, 20, probe_s=5)
        assert reply["ok"] and reply["result"] == {"echo": "retry"}
        peers = [(peer, protocol.decode_request(payload)["op"]) for peer, payload in heard]
        assert [op for _, op in peers] == ["ping", "search"] and peers[0][0] == peers[1][0]
        silent.set()
        with pytest.raises(client.Unanswered):
            client.exchange(endpoint, search, 600, probe_s=0.2)
    finally:
        gen.close()
    with pytest.raises(client.Unanswered, match="could not reach"):
        client.exchange(f"ipc://{tmp_path}/absent.sock", search, 600, probe_s=0.2)
