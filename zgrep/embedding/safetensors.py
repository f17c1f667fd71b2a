"""safetensors files read with numpy alone (the static model2vec layout, the transformer query encoder)."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np

from zgrep.embedding.base import EmbeddingError

_SAFETENSORS_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Read every tensor of a safetensors file with numpy (8-byte header size, JSON header, raw
    data); EmbeddingError for a file that is not one (a header or tensor that does not fit it)."""
    data = path.read_bytes()
    try:
        (header_size,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + header_size])
        if not isinstance(header, dict):
            raise ValueError("its header is no JSON object")
        buffer = memoryview(data)[8 + header_size :]
        return {
            name: _decode_tensor(buffer, name, info)
            for name, info in header.items()
            if name != "__metadata__"
        }
    except (struct.error, ValueError) as exc:
        raise EmbeddingError(f"{path}: not a safetensors file ({exc})") from exc


def _decode_tensor(buffer: memoryview, name: str, info: object) -> np.ndarray:
    """One tensor of the data `buffer` as a numpy array (BF16 widened to float32); ValueError when
    its record does not fit the buffer."""
    if not isinstance(info, dict):
        raise ValueError(f"tensor {name!r} has no record")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if not (
        isinstance(shape, list)
        and all(isinstance(n, int) and n >= 0 for n in shape)
        and isinstance(offsets, list)
        and len(offsets) == 2
        and all(isinstance(n, int) for n in offsets)
        and 0 <= offsets[0] <= offsets[1] <= len(buffer)
    ):
        raise ValueError(f"tensor {name!r}: bad shape or offsets")
    if dtype != "BF16" and dtype not in _SAFETENSORS_DTYPES:
        raise ValueError(f"tensor {name!r}: unsupported dtype {dtype}")
    numpy_type = np.dtype("<u2" if dtype == "BF16" else _SAFETENSORS_DTYPES[dtype]).newbyteorder(
        "<"
    )
    raw = buffer[offsets[0] : offsets[1]]
    if len(raw) != math.prod(shape) * numpy_type.itemsize:
        raise ValueError(f"tensor {name!r}: {len(raw)} bytes for shape {shape}")
    values = np.frombuffer(raw, dtype=numpy_type).reshape(shape)
    return (values.astype(np.uint32) << 16).view(np.float32) if dtype == "BF16" else values
