"""The transformer query encoder: numpy only, offline, and a static folder that names it for its queries."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from offline import run_offline
from zgrep.embedding.base import EmbeddingError
from zgrep.embedding.static import StaticEmbedder, default_model_dir
from zgrep.embedding.transformer import TransformerEncoder

QUERY_DIR = default_model_dir().parent / "minilm-l6-query"
HAVERSINE = '''def haversine_km(lat1, lon1, lat2, lon2):
    """Great-circle distance between two points on Earth in kilometres."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    a = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lon2 - lon1) / 2) ** 2
    return 2 * 6371.0 * math.asin(math.sqrt(a))
'''
FORMATTER = '''def write_dl(self, rows, col_max=30, col_spacing=2):
    """Writes a definition list into the buffer. This is how options and commands are usually formatted."""
    first_col = min(widths[0], col_max) + col_spacing
    for first, second in iter_rows(rows, len(widths)):
        self.write(f"{'':>{self.current_indent}}{first}")
'''


@pytest.fixture(scope="module")
def encoder() -> TransformerEncoder:
    return TransformerEncoder(QUERY_DIR)


def test_query_encoder_folder_names_its_source_and_licence() -> None:
    names = {p.name for p in QUERY_DIR.iterdir()}
    assert {"weights.safetensors", "tokenizer.json", "config.json", "NOTICE", "LICENSE"} <= names
    notice = (QUERY_DIR / "NOTICE").read_text()
    assert "sentence-transformers/all-MiniLM-L6-v2" in notice and "Apache" in notice
    assert "scripts/build_query_model.py" in notice
    assert sum(p.stat().st_size for p in QUERY_DIR.iterdir()) < 25_000_000


def test_vectors_are_unit_length_and_deterministic(encoder: TransformerEncoder) -> None:
    first = encoder.encode("parse command line options")
    again = TransformerEncoder(QUERY_DIR).encode("parse command line options")
    assert first.shape == (384,) and first.dtype == np.float32
    assert abs(float(np.linalg.norm(first)) - 1) < 1e-5
    assert np.array_equal(first, again)


def test_a_paraphrase_is_closer_to_its_code_than_to_other_code(encoder: TransformerEncoder) -> None:
    query = encoder.encode("distance between two latitude longitude points")
    assert query @ encoder.encode(HAVERSINE) > query @ encoder.encode(FORMATTER) + 0.2


def test_hostile_queries_embed_without_error(encoder: TransformerEncoder) -> None:
    for text in ("", "\x00\x07\ufeff", "ß" * 5000, "token " * 3000):
        vector = encoder.encode(text)
        assert vector.shape == (384,) and np.isfinite(vector).all()


def test_runs_offline_without_torch() -> None:
    out = run_offline(
        "from pathlib import Path\n"
        "from zgrep.embedding.transformer import TransformerEncoder\n"
        f"v = TransformerEncoder(Path({str(QUERY_DIR)!r})).encode('open a file')\n"
        "heavy = {'torch', 'transformers', 'onnxruntime', 'sentence_transformers', 'huggingface_hub', 'safetensors'}\n"
        "print(v.shape, sorted(heavy & set(sys.modules)))\n"
    )
    assert out == ["(384,)", "[]"]


def asymmetric_folder(tmp_path: Path, encoder_name: str = "minilm-l6-query") -> Path:
    """The default static folder plus a projection and a config naming the query encoder."""
    folder = tmp_path / "pair"
    shutil.copytree(default_model_dir(), folder)
    config = json.loads((folder / "config.json").read_text())
    dim = config["dim"]
    basis, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((384, dim)))
    np.save(folder / "projection.npy", basis.T.astype(np.float16))
    config["query_encoder"] = {"model": encoder_name, "projection": "projection.npy"}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_folder_naming_a_query_encoder_embeds_queries_through_it(
    tmp_path: Path, encoder: TransformerEncoder
) -> None:
    model = StaticEmbedder.from_dir(asymmetric_folder(tmp_path))
    projection = np.load(tmp_path / "pair" / "projection.npy").astype(np.float32)
    query = model.embed_query("retry with exponential backoff")
    expected = projection @ encoder.encode("retry with exponential backoff")
    assert np.allclose(query, expected / np.linalg.norm(expected), atol=1e-5)
    static = StaticEmbedder.from_dir(default_model_dir())
    assert np.array_equal(
        model.embed(["def f(): pass"]), static.embed(["def f(): pass"])
    )  # chunks stay static


def test_a_missing_query_encoder_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="query encoder 'no-such-encoder'"):
        StaticEmbedder.from_dir(asymmetric_folder(tmp_path, "no-such-encoder"))


def test_the_default_model_is_the_code_pair_with_real_weights() -> None:
    folder = default_model_dir()
    config = json.loads((folder / "config.json").read_text())
    assert config["query_encoder"] == {"model": "minilm-l6-query", "projection": "projection.npy"}
    notice = (folder / "NOTICE").read_text()
    assert "sentence-transformers/all-MiniLM-L6-v2" in notice and "Apache" in notice
    assert "scripts/build_code_model.py" in notice and (folder / "LICENSE").is_file()
    assert sum(p.stat().st_size for p in folder.iterdir()) < 9_000_000
    model = StaticEmbedder.from_dir(folder)
    assert model.model_id == "zgrep/minilm-l6-code-int8-256" and model.dim == 256
    chunks = model.embed([HAVERSINE, FORMATTER])
    assert chunks.shape == (2, 256) and np.allclose(np.linalg.norm(chunks, axis=1), 1, atol=1e-5)
    assert (
        model.query_encoder is not None and model.query_encoder._encoder is None
    )  # chunks never load it
    query = model.embed_query("distance between two latitude longitude points")
    assert query.shape == (256,) and abs(float(np.linalg.norm(query)) - 1) < 1e-5
    # the paraphrase reaches its code across the pair: transformer query, static chunk vectors
    assert query @ chunks[0] > query @ chunks[1] + 0.2
    listing = model.embed_query("write a definition list into the help buffer")
    assert listing @ chunks[1] > listing @ chunks[0] + 0.2


def test_the_default_pair_through_the_factory_embeds_queries_with_the_transformer(
    encoder: TransformerEncoder,
) -> None:
    from zgrep.embedding.factory import make_embedder

    model = make_embedder("local")
    projection = np.load(default_model_dir() / "projection.npy").astype(np.float32)
    expected = projection @ encoder.encode("retry with exponential backoff")
    assert np.allclose(
        model.embed_query("retry with exponential backoff"),
        expected / np.linalg.norm(expected),
        atol=1e-5,
    )


def crafted_safetensors(path: Path, header: object, body: bytes) -> Path:
    """A file in the safetensors layout with `header` as its JSON header."""
    raw = json.dumps(header).encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + body)
    return path


@pytest.mark.parametrize(
    ("header", "body"),
    [
        ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 1000]}}, b"\0" * 16),
        ({"w": {"dtype": "F32", "shape": [5], "data_offsets": [0, 16]}}, b"\0" * 16),
        ({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 3]}}, b"\0" * 3),
        ({"w": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}}, b"\0" * 16),
        ({"w": {"dtype": "F32"}}, b""),
        ({"w": "not a tensor"}, b""),
        ([1, 2], b""),
    ],
    ids=[
        "offsets past the end",
        "shape",
        "partial element",
        "negative shape",
        "no offsets",
        "not a record",
        "a list",
    ],
)
def test_a_crafted_safetensors_file_is_one_clear_error(
    tmp_path: Path, header: object, body: bytes
) -> None:
    """A model folder may come from a workspace's config: a bad weights file is refused, never read
    short or raised as a traceback."""
    from zgrep.embedding.safetensors import read_safetensors

    with pytest.raises(EmbeddingError, match="not a safetensors file"):
        read_safetensors(crafted_safetensors(tmp_path / "w.safetensors", header, body))


def test_a_query_encoder_missing_a_tensor_or_named_outside_its_folder_is_refused(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(QUERY_DIR, broken)
    crafted_safetensors(
        broken / "weights.safetensors",
        {"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}},
        b"\0" * 16,
    )
    with pytest.raises(EmbeddingError, match="not a query encoder"):
        TransformerEncoder(broken)
    with pytest.raises(EmbeddingError, match="not a folder name"):
        StaticEmbedder.from_dir(asymmetric_folder(tmp_path, "../minilm-l6-query"))


def test_a_query_of_the_deferred_pair_embeds_without_the_table_as_the_loaded_pair_does() -> None:
    from zgrep.embedding.deferred import open_static

    deferred, loaded = (
        open_static(default_model_dir()),
        StaticEmbedder.from_dir(default_model_dir()),
    )
    for ahead in (False, True):
        model = open_static(default_model_dir())
        if ahead:
            model.load_query_ahead()  # type: ignore[attr-defined]
        for query in ("retry with exponential backoff", "where is the config parsed"):
            assert np.array_equal(model.embed_query(query), loaded.embed_query(query))
        assert model._model is None  # type: ignore[attr-defined]  # the chunk table: not loaded
    # chunks after queries: the table's vectors, the same query encoder as before
    assert np.array_equal(deferred.embed_query("x y"), loaded.embed_query("x y"))
    assert np.array_equal(deferred.embed(["def f(): pass"]), loaded.embed(["def f(): pass"]))
    assert deferred.loaded().query_encoder is deferred.query_encoder()  # type: ignore[attr-defined]


def test_a_broken_query_encoder_loaded_ahead_fails_the_query_with_one_clear_error(
    tmp_path: Path,
) -> None:
    from zgrep.embedding.deferred import open_static

    folder = asymmetric_folder(tmp_path, "broken-encoder")
    shutil.copytree(QUERY_DIR, folder.parent / "broken-encoder")
    crafted_safetensors(
        folder.parent / "broken-encoder" / "weights.safetensors",
        {"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}},
        b"\0" * 16,
    )
    model = open_static(folder)
    model.load_query_ahead()  # type: ignore[attr-defined]
    for _ in range(2):
        with pytest.raises(EmbeddingError, match="not a query encoder"):
            model.embed_query("retry with backoff")


def test_the_layers_are_dequantised_to_the_same_float32_values_and_vectors(
    encoder: TransformerEncoder,
) -> None:
    """Each matrix is made in one pass: the values of `int8 -> float32, times the scale`, transposed
    for `x @ W`, bit for bit, so a query's vector is unchanged."""
    from zgrep.embedding.safetensors import read_safetensors
    from zgrep.embedding.transformer import _Layer

    tensors = read_safetensors(QUERY_DIR / "weights.safetensors")

    def reference(name: str) -> np.ndarray:
        value = tensors[name].astype(np.float32)
        if f"{name}.scale" in tensors:
            value = value * tensors[f"{name}.scale"].astype(np.float32)[:, None]
        return np.ascontiguousarray(value.T) if name.endswith("dense.weight") else value

    layers = []
    for i, layer in enumerate(encoder.layers):
        p = f"encoder.layer.{i}."
        qkv = np.hstack(
            [reference(f"{p}attention.self.{n}.weight").T for n in ("query", "key", "value")]
        )
        expected = {
            "qkv": np.ascontiguousarray(qkv),
            "attention_out": reference(f"{p}attention.output.dense.weight"),
            "up": reference(f"{p}intermediate.dense.weight"),
            "down": reference(f"{p}output.dense.weight"),
        }
        for field, value in expected.items():
            got = getattr(layer, field)
            assert got.flags.c_contiguous and np.array_equal(got, value), (i, field)
        layers.append(_Layer(**{**layer.__dict__, **expected}))
    assert np.array_equal(encoder.positions, reference("embeddings.position_embeddings.weight"))
    rebuilt = TransformerEncoder(QUERY_DIR)
    rebuilt.layers = layers
    for text in ("retry with exponential backoff", "how are routes registered"):
        assert np.array_equal(rebuilt.encode(text), encoder.encode(text))
