"""The default static model: loads offline from the package, embeds sensibly, reads model2vec folders."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from offline import run_offline
from zgrep.embedding.folder import default_model_dir
from zgrep.embedding.static import StaticEmbedder

BACKOFF = '''def retry(call, attempts=5, base_delay=0.5):
    """Call `call`, retrying on failure with exponential backoff between attempts."""
    for attempt in range(attempts):
        try:
            return call()
        except ConnectionError:
            time.sleep(base_delay * 2 ** attempt)
    raise RuntimeError("gave up after retries")
'''
CSS = """.navbar { display: flex; background-color: #fafafa; border-bottom: 1px solid #ddd; }
.navbar a { color: #333; padding: 0.5rem 1rem; text-decoration: none; }
"""
README = "# Installation\n\nRun `pip install zgrep` and then `zg index` in your repository.\n"


@pytest.fixture(scope="module")
def model() -> StaticEmbedder:
    """The committed default model."""
    return StaticEmbedder.from_dir(default_model_dir())


def test_default_model_loads_offline_without_heavy_imports() -> None:
    out = run_offline(
        "from zgrep.embedding.folder import default_model_dir\n"
        "from zgrep.embedding.static import StaticEmbedder\n"
        "m = StaticEmbedder.from_dir(default_model_dir())\n"
        "v = m.embed(['def f(): pass'])\n"
        "heavy = {'torch', 'transformers', 'model2vec', 'sentence_transformers', 'huggingface_hub', 'safetensors'}\n"
        "print(m.model_id, v.shape, sorted(heavy & set(sys.modules)))\n"
    )
    assert out == ["zgrep/minilm-l6-code-int8-256", "(1,", "256)", "[]"]


def test_committed_folder_is_complete_and_small() -> None:
    folder = default_model_dir()
    names = {p.name for p in folder.iterdir()}
    assert {
        "tokenizer.json",
        "embeddings.npy",
        "scales.npy",
        "config.json",
        "NOTICE",
        "LICENSE",
    } <= names
    assert sum(p.stat().st_size for p in folder.iterdir()) < 10_000_000
    notice = (folder / "NOTICE").read_text()
    assert "sentence-transformers/all-MiniLM-L6-v2" in notice and "Apache" in notice
    assert "scripts/build_code_model.py" in notice
    assert "Apache License" in (folder / "LICENSE").read_text()


def test_vectors_have_the_promised_shape_dtype_and_norms(model: StaticEmbedder) -> None:
    config = json.loads((default_model_dir() / "config.json").read_text())
    assert (model.model_id, model.dim) == (config["model_id"], config["dim"])
    vectors = model.embed([BACKOFF, CSS, README, "x"])
    assert vectors.shape == (4, model.dim) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = model.embed_query("retry with exponential backoff")
    assert query.shape == (model.dim,) and query.dtype == np.float32


def test_empty_inputs_give_zeros_not_nan(model: StaticEmbedder) -> None:
    assert model.embed([]).shape == (0, model.dim)
    vectors = model.embed(["", "   ", BACKOFF])
    assert not np.isnan(vectors).any()
    assert not vectors[0].any() and not vectors[1].any()


def test_embedding_is_deterministic_across_loads(model: StaticEmbedder) -> None:
    again = StaticEmbedder.from_dir(default_model_dir())
    np.testing.assert_array_equal(model.embed([BACKOFF, CSS]), again.embed([BACKOFF, CSS]))


def test_batch_equals_one_at_a_time(model: StaticEmbedder) -> None:
    texts = [BACKOFF, CSS, README, "", "naïve café über straße", "x" * 20_000, "中文 retry"]
    batch = model.embed(texts)
    single = np.stack([model.embed([text])[0] for text in texts])
    np.testing.assert_allclose(batch, single, atol=1e-6)


def test_query_is_closer_to_the_matching_code_than_to_unrelated_text(model: StaticEmbedder) -> None:
    query = model.embed_query("retry with exponential backoff")
    backoff, css, readme = model.embed([BACKOFF, CSS, README])
    assert query @ backoff > query @ css + 0.1
    assert query @ backoff > query @ readme


def write_model2vec_dir(path: Path, vocab: list[str], tensors: dict[str, np.ndarray]) -> Path:
    """A minimal model2vec folder: model.safetensors, a WordPiece tokenizer.json and config.json."""
    path.mkdir()
    tokenizer = Tokenizer(
        models.WordPiece({token: i for i, token in enumerate(vocab)}, unk_token="[UNK]")
    )
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.save(str(path / "tokenizer.json"))
    (path / "config.json").write_text(json.dumps({"model_type": "model2vec", "normalize": True}))
    (path / "model.safetensors").write_bytes(safetensors_bytes(tensors))
    return path


def safetensors_bytes(tensors: dict[str, np.ndarray]) -> bytes:
    """Serialise arrays in the safetensors layout (u64 header size, JSON header, raw little-endian data)."""
    codes = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64"}
    header, blobs, offset = {"__metadata__": {"format": "np"}}, [], 0
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array).tobytes()
        header[name] = {
            "dtype": codes[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    return len(encoded).to_bytes(8, "little") + encoded + b"".join(blobs)


def test_model2vec_folder_loads_and_pools_like_model2vec(tmp_path: Path) -> None:
    vocab = ["[UNK]", "retry", "backoff", "css", "cafe", "##s"]
    rng = np.random.default_rng(0)
    table = rng.standard_normal((len(vocab), 8)).astype(np.float16)
    weights = rng.uniform(0.5, 2.0, len(vocab)).astype(np.float32)
    folder = write_model2vec_dir(
        tmp_path / "tiny-m2v", vocab, {"embeddings": table, "weights": weights}
    )
    model = StaticEmbedder.from_dir(folder)
    assert (model.model_id, model.dim) == ("model2vec/tiny-m2v", 8)
    rows = table.astype(np.float32) * weights[:, None]
    expected = (rows[1] + rows[2] + rows[5]) / 3
    got = model.embed_query("Retry backoffs")
    np.testing.assert_allclose(got, expected / np.linalg.norm(expected), atol=1e-6)
    np.testing.assert_allclose(
        model.embed_query("retry xyzzy"), model.embed_query("retry"), atol=1e-6
    )
    np.testing.assert_allclose(model.embed_query("CAFÉ"), model.embed_query("cafe"), atol=1e-6)
    assert not model.embed_query("xyzzy").any()


def test_model2vec_token_mapping_is_honoured(tmp_path: Path) -> None:
    vocab = ["[UNK]", "retry", "backoff"]
    centroids = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    mapping = np.array([0, 2, 1], dtype=np.int64)
    folder = write_model2vec_dir(
        tmp_path / "mapped", vocab, {"embeddings": centroids, "mapping": mapping}
    )
    model = StaticEmbedder.from_dir(folder, model_id="custom/id")
    assert model.model_id == "custom/id"
    np.testing.assert_allclose(model.embed_query("retry"), [0.0, 1.0])
    np.testing.assert_allclose(model.embed_query("backoff"), [1.0, 0.0])


def test_a_folder_without_a_model_is_one_clear_error(tmp_path: Path) -> None:
    from zgrep.embedding.base import EmbeddingError

    with pytest.raises(EmbeddingError, match="not a static model folder"):
        StaticEmbedder.from_dir(tmp_path)


def test_a_zgrep_folder_whose_config_misstates_the_dimension_is_one_clear_error(
    tmp_path: Path,
) -> None:
    """The folder is read on first embedding; the index was made for config.json's `dim`, so a table of
    another width must fail loudly there, not give vectors of the wrong length."""
    import shutil

    from zgrep.embedding.base import EmbeddingError
    from zgrep.embedding.deferred import open_static

    folder = tmp_path / "model"
    shutil.copytree(default_model_dir(), folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "dim": config["dim"] // 2}))
    model = open_static(folder)
    assert model.dim == config["dim"] // 2
    for _ in range(2):  # and again: a failed load leaves nothing half-loaded behind
        with pytest.raises(EmbeddingError, match="config.json says dim"):
            model.embed_query("retry with backoff")


def test_the_int8_model_embeds_exactly_as_its_dequantised_float_table():
    """The committed model is kept int8 with its scales (rows dequantised per text): the vectors are the ones a
    float32 table of `embeddings * scales` gives, bit for bit."""
    kept = StaticEmbedder.from_dir(default_model_dir())
    quantised, tokenizer, model_id, max_length, scales = StaticEmbedder._zgrep_parts(
        default_model_dir(), None
    )
    table = StaticEmbedder(
        quantised.astype(np.float32) * scales[:, None], tokenizer, model_id, max_length
    )
    texts = [
        "def parse_config(path):\n    return toml.load(path)",
        "",
        "héllo wörld",
        "x " * 3000,
        "class QuerySet:\n    def filter(self, *args, **kwargs): ...",
    ]
    assert np.array_equal(kept.embed(texts), table.embed(texts))
    assert np.array_equal(kept.embed(["csrf token check"]), table.embed(["csrf token check"]))


def test_the_default_model_names_its_id_and_dim_without_numpy_and_embeds_like_the_loaded_one() -> (
    None
):
    """What a no-change `zg index` or an index whose workers embed asks of the model (its id and dimension) costs
    no numpy, tokenizers or table; its first embedding loads the model and gives the loaded model's vectors."""
    code = (
        "import sys\n"
        "from zgrep.embedding.factory import make_embedder\n"
        "m = make_embedder('local')\n"
        "print(m.model_id, m.dim, sorted({'numpy', 'tokenizers'} & set(sys.modules)))\n"
        "v = m.embed(['def f(): pass', 'retry with backoff'])\n"
        "print(sorted({'numpy', 'tokenizers'} & set(sys.modules)), v.tobytes().hex())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[0] == "zgrep/minilm-l6-code-int8-256 256 []"
    assert out[1].startswith("['numpy', 'tokenizers'] ")
    loaded = StaticEmbedder.from_dir(default_model_dir()).embed(
        ["def f(): pass", "retry with backoff"]
    )
    assert out[1].split()[-1] == loaded.tobytes().hex()


def test_word_split_texts_embed_as_the_whole_tokenizer_does(model: StaticEmbedder) -> None:
    """Texts split word by word (ASCII after normalising) pool the ids the tokenizer gives a whole
    text: long texts truncated at max_length tokens, unknown words, controls, an added token."""
    texts = [
        BACKOFF,
        CSS,
        README,
        (BACKOFF + CSS) * 40,  # past 512 tokens
        "naïve café über",  # ASCII once accents are stripped
        "x" * 150 + " ok",  # a word longer than WordPiece's limit: [UNK]
        "tab\tcontrol\x07bell [PAD] padded",
        "日本語 text",  # non-ASCII after normalising: split as the pre-tokenizer splits it
        "",
    ]
    assert model.words is not None
    got = model.embed(texts)
    whole = [e.ids for e in model.tokenizer.encode_batch_fast(texts, add_special_tokens=False)]
    for text, ids, vector in zip(texts, whole, got):
        kept = [i for i in ids if i != model.unk_id]
        rows = model.table[kept].astype(np.float32) * model.scales[kept, None]
        mean = rows.sum(axis=0) if kept else np.zeros(model.dim, np.float32)
        expected = mean / max(float(np.linalg.norm(mean)), 1e-12)
        assert np.abs(vector - expected).max() < 1e-6, text[:40]


UNICODE_TEXTS = [
    "日本語のテキスト、句読点。「引用」と（括弧）",
    "Привет, мир! — «цитата» … конец",
    "مرحبا بالعالم؟ ، نص",
    "नमस्ते दुनिया। किताब पढ़ो",
    "Ελληνικά; κείμενο· τέλος",
    "emoji 🎉 and symbols € © ™ ± ∑ ∫ ≤ → ←",
    "non\u00a0breaking\u2003em space\u3000ideographic\u2028line",
    "zero\u200bwidth \u200e rtl mark \ufeff bom \u00ad soft",
    "combining e\u0301 and 한국어 텍스트",
    "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ！？",
    "¿Qué? ¡Sí! «oui» „Anführung“ ‘single’ ‹x›",
    "private \ue000 use, unassigned \U000e0001 tag, surrogate-free 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    'msgid "Add %(name)s"\nmsgstr "Dodaj %(name)s" — ŻÓŁĆ ęśąź ñ ß ø å',
    ("Одна длинная строка, " * 60) + "конец",  # past 512 tokens
]


def test_non_ascii_texts_are_split_word_by_word_into_the_tokenizers_own_ids(
    model: StaticEmbedder,
) -> None:
    """Text that stays non-ASCII after normalising (translations, comments in other scripts) takes
    the word path, and its ids are the tokenizer's own: punctuation, whitespace, symbols, marks,
    format characters and truncation alike."""
    assert all(model._word_split_text(text) is not None for text in UNICODE_TEXTS)
    whole = [
        e.ids for e in model.tokenizer.encode_batch_fast(UNICODE_TEXTS, add_special_tokens=False)
    ]
    got: dict[int, list[int]] = {}
    for rows, (ids, lengths) in model._token_ids(UNICODE_TEXTS):
        ends = np.cumsum(lengths)
        got.update((row, ids[end - n : end].tolist()) for row, end, n in zip(rows, ends, lengths))
    for i, text in enumerate(UNICODE_TEXTS):
        assert got[i] == whole[i], text[:40]


def test_threads_sharing_one_model_embed_as_one_thread_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A daemon's threads share one model: while one learns new words (and its word memory starts
    afresh when full), another's texts still get their own tokens."""
    from concurrent.futures import ThreadPoolExecutor

    from zgrep.embedding import words

    monkeypatch.setattr(words, "MAX_WORDS", 40)  # forget often, to meet the other threads' reads
    shared = StaticEmbedder.from_dir(default_model_dir())
    batches = [
        [f"word{i}_{j} {BACKOFF if j % 2 else CSS} tail{i}{j}" for j in range(8)] for i in range(24)
    ]
    expected = [StaticEmbedder.from_dir(default_model_dir()).embed(b) for b in batches]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(shared.embed, batches * 3))
    for i, vectors in enumerate(got):
        assert np.abs(vectors - expected[i % len(batches)]).max() < 1e-6, i
