"""Have the native engine load a collection while pymilvus imports: one gRPC LoadCollection sent
through grpc alone (its request encoded here: no pymilvus), so the engine's load of the data (~0.25 s
on flask) overlaps the import; the store's own load then finds it done, or waits for the same load.
Driver-free; best effort (the store's own load meets whatever went wrong here)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zgrep.store.native import NativeEngine

# a local engine's channel: no keepalive pings (it answers pings without calls with GOAWAY
# too_many_pings)
LOCAL_GRPC = {"grpc.keepalive_time_ms": 2**31 - 1, "grpc.keepalive_permit_without_calls": 0}
_LOAD = "/milvus.proto.milvus.MilvusService/LoadCollection"
_LOAD_TIMEOUT_S = 60.0  # the call returns once the collection is loaded


def load_ahead(engine: NativeEngine, collection: str) -> threading.Thread:
    """A started thread that asks `engine`, once it listens, to load `collection` (join it before
    closing the engine)."""
    thread = threading.Thread(
        target=_load, args=(engine, collection), name="zg-preload", daemon=True
    )
    thread.start()
    return thread


def _load(engine: NativeEngine, collection: str) -> None:
    try:
        if not engine.listening():
            return
        import grpc

        with grpc.insecure_channel(engine.uri, options=list(LOCAL_GRPC.items())) as channel:
            channel.unary_unary(_LOAD)(load_request(collection), timeout=_LOAD_TIMEOUT_S)
    except Exception:  # (the store's own load reports it)
        pass


def load_request(collection: str) -> bytes:
    """milvus.proto.milvus.LoadCollectionRequest with its collection_name (field 3) alone, as
    protobuf encodes it."""
    name = collection.encode()
    return b"\x1a" + _varint(len(name)) + name


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)
