"""store.preload: the LoadCollection a search sends before pymilvus is imported is the request pymilvus
sends, and the engine has the collection loaded once it returns."""

from __future__ import annotations

from pathlib import Path

import pytest

from zgrep.store.milvus import MilvusStore
from zgrep.store.native import NativeEngine
from zgrep.store.preload import load_ahead, load_request
from zgrep.store.rows import plain_row


@pytest.mark.parametrize("name", ["zg_0123456789_zgrep_minilm_l6_code_int8_256", "x" * 200])
def test_the_load_request_is_the_one_pymilvus_sends(name: str) -> None:
    from pymilvus.client.prepare import Prepare

    assert load_request(name) == Prepare.load_collection(name, None).SerializeToString()


def test_a_collection_loaded_ahead_is_loaded_when_the_store_connects(tmp_path: Path) -> None:
    data = str(tmp_path / "milvus.db")
    store = MilvusStore(data, "zg_probe", 4)
    try:
        store.create()
        store.insert([plain_row("a", "a.py", "retry", [1.0, 0.0, 0.0, 0.0])])
    finally:
        store.close()
    states = []
    for ahead in (False, True):
        engine = NativeEngine(Path(data), 30.0)
        if ahead:
            load_ahead(engine, "zg_probe").join()
        store = MilvusStore(data, "zg_probe", 4, engine=engine)
        try:
            states.append(str(store.client.get_load_state("zg_probe")["state"]))
            store.ensure_loaded()
            assert [h.fields["path"] for h in store.search_lexical("retry", 1)] == ["a.py"]
        finally:
            store.close()
    assert states == ["NotLoad", "Loaded"]  # a reopened collection starts released
