"""The workspace's Milvus collection: schema, writes by path, and the two search routes."""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any, ParamSpec, TypeVar, cast

from zgrep.store.lazydeps import without_unused

with without_unused():  # no pandas, requests or .env (store.lazydeps)
    from pymilvus import DataType, Function, FunctionType, MilvusClient
    from pymilvus.client import entity_helper
    from pymilvus.client import field_data_extractors
    from pymilvus.client import ts_utils
    from pymilvus.client import type_info
    from pymilvus.client.prepare import Prepare
    from pymilvus.client.utils import check_status
    from pymilvus.decorators import retry_on_rpc_failure
    from pymilvus.exceptions import MilvusException

from zgrep.service import ErrorCode, FixedCodeError
from zgrep.store.native import EngineError, NativeEngine, is_lite
from zgrep.store.preload import LOCAL_GRPC
from zgrep.store.expr import in_list, quote
from zgrep.store.rows import MAX_NAMES
from zgrep.types import ChunkFields, RouteHit
from zgrep.workspace import redact

# the fields a route hit carries: what the rerank and the hits read (mtime only filters, in
# expressions)
SCALAR_FIELDS = (
    "path",
    "language",
    "symbol",
    "names",
    "symbol_kind",
    "scope",
    "start_line",
    "end_line",
    "content",
)
# names a symbol lookup asks as `==`s rather than one `in` (store._symbol_clause): ~2 ms of engine
# CPU each on Django against ~7-11 ms for an `in` list of any length
SYMBOL_EQUALS = 4
_DELETE_BATCH = 500
# rows per insert call: the native engine's CPU per row grows with the call's size (Django's rows,
# 20k inserted: 0.38 ms a row in calls of 256, 0.52 in calls of 600, 1.1 in calls of 2,000)
_INSERT_BATCH = 256
CHECK_TIMEOUT_S = 5.0  # a health check's call: pymilvus retries an engine's internal error (damaged data) until then

for _name in ("pymilvus", "milvus_lite"):
    logging.getLogger(_name).setLevel(logging.CRITICAL)

# pymilvus's row insert "checks" a VARCHAR value by iterating it character by character (each
# character's length against max_length: it can never fail) and spends ~1/3 of a cold index there.
# Every string zg writes is already clipped to its field's length (store/rows.py).
entity_helper.CHECK_STR_ARRAY = False


class StoreError(FixedCodeError):
    """Milvus is unreachable or refused an operation; one line for the user."""

    CODE = ErrorCode.STORE


class StoreBusy(StoreError):
    """Another process holds the Milvus Lite data file."""


class StoreDamaged(StoreError):
    """The Milvus Lite data file cannot be read as it is."""

    def __init__(self, uri: str, detail: str) -> None:
        super().__init__(
            f"the Milvus Lite data in {uri} is damaged ({detail}); rebuild it with: zg index --full"
        )
        self.detail = detail


P = ParamSpec("P")
R = TypeVar("R")


def reported(method: Callable[P, R]) -> Callable[P, R]:
    """A store method whose Milvus failures become StoreError (one line, credentials masked)."""

    @wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except MilvusException as exc:
            raise StoreError(redact(f"Milvus: {exc.message}")) from None

    return call


def _open_failure(uri: str, detail: str) -> StoreError:
    """The error for a Milvus that could not be opened, naming the fix."""
    if is_lite(uri):
        return StoreDamaged(uri, detail)
    return StoreError(
        f"cannot open Milvus at {redact(uri)}: the server is unreachable ({redact(detail)}); start it, "
        "or fix --milvus-uri / ZG_MILVUS_URI"
    )


class MilvusStore:
    """A Milvus collection holding the chunks of one workspace for one model."""

    def __init__(
        self,
        uri: str,
        collection: str,
        dim: int,
        token: str | None = None,
        timeout: float = 30.0,
        engine: NativeEngine | None = None,
    ) -> None:
        """Connect to the server at `uri`, or to the native engine on the Milvus Lite file `uri`
        (`engine`, when the caller started it already, else started here)."""
        self.uri = uri
        self.collection = collection
        self.dim = dim
        self.engine = (
            engine if engine is not None or not is_lite(uri) else NativeEngine(Path(uri), timeout)
        )
        self._loaded = False
        try:
            if self.engine is not None:
                self.engine.wait()
                # a local engine: no keepalive pings (it answers pings without calls with GOAWAY
                # too_many_pings)
                self.client = MilvusClient(
                    uri=self.engine.uri, timeout=timeout, grpc_options=LOCAL_GRPC
                )
            else:
                self.client = MilvusClient(uri=uri, token=token or "", timeout=timeout)
        except EngineError as exc:
            self.close()
            if exc.busy:
                raise StoreBusy(
                    f"the Milvus Lite data in {uri} is held by {exc.busy}; Milvus Lite admits one process "
                    "at a time: wait for it to finish or stop it"
                ) from None
            raise _open_failure(uri, str(exc)) from None
        except MilvusException as exc:
            error = self._failure(exc)
            self.close()
            raise error from None
        except Exception as exc:  # pymilvus raises bare exceptions for unreachable servers
            self.close()
            raise _open_failure(uri, str(exc)) from None

    def sibling(self, collection: str) -> MilvusStore:
        """Another collection through the same connection (closing either closes both)."""
        other = copy.copy(self)
        other.collection = collection
        other._loaded = False
        return other

    def exists(self) -> bool:
        """Whether the collection exists (StoreError when Milvus cannot read its data)."""
        try:
            return bool(self.client.has_collection(self.collection, timeout=CHECK_TIMEOUT_S))
        except MilvusException as exc:
            raise self._failure(exc) from None

    def count(self) -> int:
        """Number of chunks stored (StoreError when Milvus cannot read its data)."""
        try:
            stats = self.client.get_collection_stats(self.collection, timeout=CHECK_TIMEOUT_S)
        except MilvusException as exc:
            raise self._failure(exc) from None
        return int(stats.get("row_count", 0))

    def _failure(self, exc: MilvusException) -> StoreError:
        """The error for a failed check: the engine's own last error line names the damage when it
        has one."""
        return _open_failure(
            self.uri, (self.engine.last_error() if self.engine else "") or exc.message
        )

    @reported
    def rows(self, fields: list[str]) -> list[ChunkFields]:
        """Every stored row with `fields` (checks and benchmarks of what the index holds)."""
        self.ensure_loaded()
        iterator = self.client.query_iterator(
            self.collection, batch_size=1000, filter="", output_fields=fields
        )
        out: list[ChunkFields] = []
        while batch := iterator.next():
            out.extend(batch)
        iterator.close()
        return out

    @reported
    def create(self) -> None:
        """Create the collection with dense, BM25-sparse and scalar fields."""
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("path", DataType.VARCHAR, max_length=4096)
        schema.add_field("language", DataType.VARCHAR, max_length=32)
        schema.add_field("symbol", DataType.VARCHAR, max_length=512)
        schema.add_field(
            "names",
            DataType.ARRAY,
            element_type=DataType.VARCHAR,
            max_capacity=MAX_NAMES,
            max_length=512,
        )
        schema.add_field("symbol_kind", DataType.VARCHAR, max_length=16)
        schema.add_field("scope", DataType.VARCHAR, max_length=1024)
        schema.add_field("start_line", DataType.INT64)
        schema.add_field("end_line", DataType.INT64)
        schema.add_field("mtime", DataType.INT64)
        schema.add_field("content", DataType.VARCHAR, max_length=65535)
        schema.add_field(
            "lexical",
            DataType.VARCHAR,
            max_length=65535,
            enable_analyzer=True,
            analyzer_params={"tokenizer": "standard"},
        )
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=self.dim)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="lexical_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["lexical"],
                output_field_names=["sparse"],
            )
        )
        index = self.client.prepare_index_params()
        index.add_index("dense", index_type="FLAT", metric_type="IP")
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        self.client.create_collection(self.collection, schema=schema)
        # sync=False: pymilvus would poll each index of the empty collection every 0.5 s, a second
        # of sleep per new collection; the load below waits for what it needs
        self.client.create_index(self.collection, index, sync=False)
        self.client.load_collection(self.collection)
        self._loaded = True

    @reported
    def drop(self) -> None:
        """Drop the collection if it exists."""
        if self.exists():
            self.client.drop_collection(self.collection)
        self._loaded = False

    @reported
    def ensure_loaded(self) -> None:
        """Load the collection into memory (collections start released after a reopen)."""
        if not self._loaded:
            self.client.load_collection(self.collection)
            self._loaded = True

    @reported
    def delete_paths(self, paths: Iterable[str]) -> None:
        """Remove every chunk of the given paths."""
        batch = list(paths)
        for i in range(0, len(batch), _DELETE_BATCH):
            part = batch[i : i + _DELETE_BATCH]
            self.client.delete(self.collection, filter=in_list("path", part))

    @reported
    def insert(self, rows: list[ChunkFields]) -> None:
        """Insert chunk rows (fields of the schema except `sparse`), sent column by column."""
        if not rows:
            return
        # MilvusClient.insert takes rows only and converts each value on its own (a cold index of
        # Django spent ~2/3 of the indexing process's CPU there); its connection's batch_insert
        # takes the same request's columns whole
        schema = self.client.describe_collection(self.collection)
        types = {f["name"]: f["type"] for f in schema["fields"]}
        connection = self.client._get_connection()
        context = self.client._generate_call_context()
        plain = cast(list[dict[str, Any]], rows)
        for i in range(0, len(plain), _INSERT_BATCH):
            part = plain[i : i + _INSERT_BATCH]
            columns = [
                {"name": name, "type": types[name], "values": [row[name] for row in part]}
                for name in part[0]
            ]
            connection.batch_insert(self.collection, columns, schema=schema, context=context)

    @reported
    def flush(self) -> None:
        """Seal written data so searches use built indexes instead of scanning growing segments."""
        self.client.flush(self.collection)

    @reported
    def search_dense(self, vector: list[float], limit: int, expr: str = "") -> list[RouteHit]:
        """Nearest chunks by inner product of normalised vectors."""
        return next(iter(self._send_search([vector], "dense", "IP", limit, expr)), [])

    @reported
    def search_lexical(self, text: str, limit: int, expr: str = "") -> list[RouteHit]:
        """Best BM25 chunks for already-normalised query text."""
        return self.search_lexical_many([text], limit, expr)[0]

    @reported
    def search_lexical_many(
        self, texts: list[str], limit: int, expr: str = ""
    ) -> list[list[RouteHit]]:
        """The BM25 hits of each normalised query text, all in one call."""
        asked = [t for t in dict.fromkeys(texts) if t.strip()]
        found: dict[str, list[RouteHit]] = {}
        if asked:
            found = dict(zip(asked, self._send_search(asked, "sparse", "BM25", limit, expr)))
        return [found.get(t, []) for t in texts]

    def _send_search(
        self, data: list[Any], field: str, metric: str, limit: int, expr: str
    ) -> list[list[RouteHit]]:
        """Each query's hits (a query per item of `data`), asked as pymilvus's `MilvusClient.search`
        asks (the same Prepare call, guarantee timestamp, metadata and retries, on its connection's
        stub) and read from the reply's columns: pymilvus's own reading makes a Hit and a dict per
        hit and decodes each ARRAY cell on its own (80 dense hits: 1.0 ms against 0.5). Internals of
        pymilvus: pinned <3.1 in pyproject.toml."""
        self.ensure_loaded()
        handler = self.client._get_connection()
        context = self.client._generate_call_context()
        kwargs: dict[str, Any] = self.client._with_cluster_id({})
        default_consistency = ts_utils.construct_guarantee_ts(
            self.collection, kwargs, handler.server_address, context.get_db_name()
        )
        request = Prepare.search_requests_with_expr(
            collection_name=self.collection,
            anns_field=field,
            param={"metric_type": metric},
            limit=limit,
            data=data,
            expr=expr,
            output_fields=list(SCALAR_FIELDS),
            use_default_consistency=default_consistency,
            expr_params={},
            **kwargs,
        )
        return _search_hits(_ask_search(handler, request, context, timeout=None).results)

    @reported
    def search_symbols(
        self,
        names: list[str],
        limit: int,
        expr: str = "",
        lexical: str = "",
        lexical_hits: list[RouteHit] | None = None,
        symbol_rows: list[dict[str, Any]] | None = None,
    ) -> list[RouteHit]:
        """Chunks defining one of `names` exactly (as their symbol or merged in), definitions first.

        Milvus Lite scans every row for `array_contains_any` (~1 s on Django's 43k chunks), so with
        `lexical` (the names as BM25 query text) the chunks come from an exact `symbol in` query
        (`symbol_rows` when the caller already ran it: `symbol_rows(names, limit, expr)`) plus the
        BM25 route (`lexical_hits` when the caller already ran it), keeping those whose `names`
        hold a name."""
        if not names:
            return []
        self.ensure_loaded()
        wanted = set(names)
        if lexical:
            rows: list[Any] = list(
                self.symbol_rows(names, limit, expr) if symbol_rows is None else symbol_rows
            )
            seen = {r["id"] for r in rows}
            found = (
                self.search_lexical(lexical, limit, expr) if lexical_hits is None else lexical_hits
            )
            rows += [
                {"id": h.id, **h.fields}
                for h in found
                if h.id not in seen and wanted.intersection(h.fields.get("names") or ())
            ]
        else:
            clause = f"array_contains_any(names, [{', '.join(quote(n) for n in names)}])"
            rows = self.client.query(
                self.collection,
                filter=f"({clause}) and ({expr})" if expr else clause,
                output_fields=["id", *SCALAR_FIELDS],
                limit=limit,
            )
        order = {n: i for i, n in enumerate(names)}

        def preference(row: ChunkFields) -> tuple[Any, ...]:
            named = min((order[n] for n in row["names"] if n in order), default=len(order))
            return (
                named,
                row["symbol"] not in order,
                row["symbol_kind"] not in ("class", "interface", "function"),
                row["scope"] != "",
                len(row["path"]),
                row["start_line"],
            )

        rows = sorted(rows, key=preference)[:limit]
        return [
            RouteHit(r["id"], rank, 0.0, cast(ChunkFields, {k: r[k] for k in SCALAR_FIELDS}))
            for rank, r in enumerate(rows)
        ]

    @reported
    def symbol_rows(self, names: list[str], limit: int, expr: str = "") -> list[dict[str, Any]]:
        """The rows (id and SCALAR_FIELDS) whose `symbol` is one of `names`, at most `limit`."""
        self.ensure_loaded()
        clause = _symbol_clause(names)
        return list(
            self.client.query(
                self.collection,
                filter=f"({clause}) and ({expr})" if expr else clause,
                output_fields=["id", *SCALAR_FIELDS],
                limit=limit,
            )
        )

    def close(self) -> None:
        """Release the connection and, for Milvus Lite, stop its engine (which frees the data file)."""
        client = getattr(self, "client", None)
        if client is not None:
            try:
                client.close()
            except Exception:  # closing a dead connection must not mask the real error
                pass
        if self.engine is not None:
            self.engine.close()


def _symbol_clause(names: list[str]) -> str:
    """The rows whose `symbol` is one of `names`. milvus-lite 2.5.1 scans a VARCHAR `in` list 3-5x
    slower than `==` (Django's 43.5k rows: ~7 ms of engine CPU for one name, ~9 for three, against
    ~2 for one `==`) and merges `==`s joined by `or` into an `in`, so a few names are each `==`
    with `start_line >= 1` (true of every chunk), which it leaves apart: ~6.5 ms for three."""
    if len(names) > SYMBOL_EQUALS:
        return in_list("symbol", names)
    if len(names) == 1:
        return f"symbol == {quote(names[0])}"
    return " or ".join(f"(symbol == {quote(n)} and start_line >= 1)" for n in names)


@retry_on_rpc_failure()
def _ask_search(handler: Any, request: Any, context: Any, timeout: float | None = None) -> Any:
    """A search request's reply from pymilvus's connection `handler`, checked and retried as its
    `search` does (gRPC failures retried, then a MilvusException)."""
    response = handler._stub.Search(request, timeout=timeout, metadata=context.to_grpc_metadata())
    check_status(response.status)
    return response


def _search_hits(results: Any) -> list[list[RouteHit]]:
    """Each query's hits in a SearchResultData: ids, scores and every output field read as whole
    columns, then cut at each query's top-k."""
    ids = results.ids.str_id.data
    scores = results.scores
    columns = {column.field_name: _column(column, len(ids)) for column in results.fields_data}
    names = list(columns)
    rows = list(zip(*columns.values())) if columns else [()] * len(ids)
    out: list[list[RouteHit]] = []
    start = 0
    for count in results.topks:
        out.append(
            [
                RouteHit(ids[i], i - start, scores[i], cast(ChunkFields, dict(zip(names, rows[i]))))
                for i in range(start, start + count)
            ]
        )
        start += count
    return out


def _column(field: Any, rows: int) -> list[Any]:
    """A FieldData's values, as pymilvus's hits hold them (an ARRAY cell as a list)."""
    if field.type != DataType.ARRAY or field.valid_data:
        return list(field_data_extractors.decode_range(field, 0, rows))
    attr = type_info.get_array_element_attr(field.scalars.array_data.element_type)
    return [list(getattr(cell, attr).data) for cell in field.scalars.array_data.data]
