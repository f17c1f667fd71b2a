"""safetensors files read with numpy alone (the static model2vec layout, the transformer query encoder)."""

from __future__ import annotations

import json
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
    data)."""
    data = path.read_bytes()
    try:
        (header_size,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + header_size])
    except (struct.error, ValueError) as exc:
        raise EmbeddingError(f"{path}: not a safetensors file ({exc})") from exc
    buffer = memoryview(data)[8 + header_size :]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        tensors[name] = _decode_tensor(buffer[begin:end], info["dtype"], info["shape"], path)
    return tensors


def _decode_tensor(raw: memoryview, dtype: str, shape: list[int], path: Path) -> np.ndarray:
    """One safetensors buffer as a numpy array (BF16 widened to float32)."""
    if dtype == "BF16":
        return (
            (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16)
            .view(np.float32)
            .reshape(shape)
        )
    if dtype not in _SAFETENSORS_DTYPES:
        raise EmbeddingError(f"{path}: unsupported safetensors dtype {dtype}")
    return np.frombuffer(raw, dtype=np.dtype(_SAFETENSORS_DTYPES[dtype]).newbyteorder("<")).reshape(
        shape
    )
