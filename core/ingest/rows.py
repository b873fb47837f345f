"""Arrow schemas of the ingest output and the conversion of chunks to rows.

One row per chunk (``chunks/part-*.parquet``), written from the chunk record: one column per field
of the chunk field table (:mod:`grounded.model.chunk_fields`; read a row back with
:func:`grounded.metadata.chunk_of`); boxes are a nested column: a list of
``struct{page, left, top, right, bottom, mode, heading, element_id, spans: list<struct{left, top,
right, bottom}>}`` (LTRB fractions of the page, origin top-left, as in
:class:`grounded.ParsingBoundingBox`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import BackendUnavailableError
from ..io.chunk_codec import chunk_to_row
from ..model.chunk import Chunk
from ..model.chunk_fields import FIELDS, search_keys


def search_text(row: Mapping[str, Any]) -> str:
    """What search reads of a chunk row (``text``, ``body_start`` and the field table's
    :func:`~grounded.model.chunk_fields.search_keys`): each non-empty context value on its own line
    (the section, i.e. the heading path ``A > B``), then the body (``text[body_start:]``). The
    LanceDB table's full-text index is built on it (column ``search_text``) and ``--embed`` embeds
    it fitted to the model's window (:func:`embed_text`); the stored ``text`` is unchanged. Without context it is the body itself."""
    body = str(row.get("text") or "")[int(row.get("body_start") or 0) :]
    context = [str(row[k]) for k in search_keys() if row.get(k)]
    return "\n".join([*context, body])


def embed_text(row: Mapping[str, Any], count: Callable[[str], int], window: int) -> tuple[str, int]:
    """What the embedder reads of a chunk row: :func:`search_text` fitted to the model's ``window``
    (tokens without its special tokens, counted by ``count`` with the model's tokenizer), since the
    model silently drops whatever lies beyond it. The body comes first: a context line that does not
    fit in the room the body leaves loses its outermost headings (``A > B > C`` -> ``B > C`` ->
    ``C``), then goes. Returns the text and how many body tokens lie beyond the window (0: the
    model sees the whole body; more: a chunk longer than the window, whose tail the model cuts)."""
    body = str(row.get("text") or "")[int(row.get("body_start") or 0) :]
    context = [str(row[k]) for k in search_keys() if row.get(k)]
    beyond = count(body) - window
    if beyond >= 0 or not context:
        return body, max(0, beyond)
    while context:
        text = "\n".join([*context, body])
        if count(text) <= window:
            return text, 0
        parts = context[0].split(" > ")
        context = [" > ".join(parts[1:]), *context[1:]] if len(parts) > 1 else context[1:]
    return body, 0


def _pa() -> Any:
    try:
        import pyarrow as pa
    except ImportError as exc:
        raise BackendUnavailableError("grounded ingest (Parquet output)", "ingest", "pyarrow") from exc
    return pa


def span_type() -> Any:
    pa = _pa()
    return pa.struct(
        [("left", pa.float64()), ("top", pa.float64()), ("right", pa.float64()), ("bottom", pa.float64())]
    )


def box_type() -> Any:
    pa = _pa()
    return pa.struct(
        [
            ("page", pa.int32()),
            ("left", pa.float64()),
            ("top", pa.float64()),
            ("right", pa.float64()),
            ("bottom", pa.float64()),
            ("mode", pa.string()),
            ("heading", pa.bool_()),
            ("element_id", pa.string()),
            ("spans", pa.list_(span_type())),
        ]
    )


def _arrow_type(name: str) -> Any:
    """The Arrow type of a field-table ``arrow`` name (:mod:`grounded.model.chunk_fields`)."""
    pa = _pa()
    simple = {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64(), "float64": pa.float64(),
              "bool": pa.bool_(), "json": pa.string(), "list<int32>": pa.list_(pa.int32()),
              "list<string>": pa.list_(pa.string())}
    return pa.list_(box_type()) if name == "boxes" else simple[name]


#: columns of a row that are not chunk fields: where the chunk came from and its vector
_SOURCE_COLUMNS = (("source_path", "string"), ("source_sha256", "string"), ("config_fingerprint", "string"))


def embedding_type(dim: int | None) -> Any:
    """The ``embedding`` column's type: ``FixedSizeList<float32>[dim]`` (DuckDB reads it as
    ``FLOAT[dim]``, LanceDB as a vector), or a (null) variable list when the run does not embed."""
    pa = _pa()
    return pa.list_(pa.float32()) if dim is None else pa.list_(pa.float32(), dim)


def chunk_schema(dim: int | None = None) -> Any:
    """One column per field of the chunk field table (in its order; ``body`` after ``text``), the
    source columns, then ``embedding`` (``dim``: the embedding size of the run, None: no embeddings)."""
    pa = _pa()
    fields: list[tuple[str, Any]] = []
    for f in FIELDS:
        fields.append((f.key, _arrow_type(f.arrow)))
        if f.key == "text":
            fields.append(("body", pa.string()))
    fields.extend((name, _arrow_type(t)) for name, t in _SOURCE_COLUMNS)
    fields.append(("embedding", embedding_type(dim)))
    return pa.schema(fields)


def documents_schema() -> Any:
    pa = _pa()
    return pa.schema(
        [
            ("path", pa.string()),
            ("sha256", pa.string()),
            ("config_fingerprint", pa.string()),
            ("parser", pa.string()),
            ("strategy", pa.string()),
            ("pages", pa.int32()),
            ("chunks", pa.int32()),
            ("part", pa.string()),
            ("parse_seconds", pa.float64()),
            ("chunk_seconds", pa.float64()),
            ("embed_seconds", pa.float64()),
            ("write_seconds", pa.float64()),
        ]
    )


def errors_schema() -> Any:
    pa = _pa()
    return pa.schema(
        [
            ("path", pa.string()),
            ("sha256", pa.string()),
            ("config_fingerprint", pa.string()),
            ("error_type", pa.string()),
            ("message", pa.string()),
        ]
    )


def chunk_rows(
    chunks: Sequence[Chunk],
    *,
    source_path: str,
    source_sha256: str,
    config_fingerprint: str,
    embeddings: Any = None,
    dim: int | None = None,
) -> Any:
    """A :class:`pyarrow.Table` (schema :func:`chunk_schema` of ``dim``) of one document's chunks;
    ``embeddings``: an (n, dim) array (``dim`` defaults to its width), or None (a null column)."""
    pa = _pa()
    vectors = None
    if embeddings is not None:
        vectors = np.ascontiguousarray(embeddings, dtype=np.float32).reshape(len(chunks), dim or -1)
        dim = int(vectors.shape[1])
    schema = chunk_schema(dim)
    columns: dict[str, list[Any]] = {name: [] for name in schema.names}
    source = {"source_path": source_path, "source_sha256": source_sha256, "config_fingerprint": config_fingerprint}
    for c in chunks:
        row = {**chunk_to_row(c), **source}
        for name, values in columns.items():
            if name != "embedding":
                values.append(row[name])
    arrays = {name: pa.array(values, type=schema.field(name).type) for name, values in columns.items() if name != "embedding"}
    n = len(chunks)
    if vectors is None:
        arrays["embedding"] = pa.nulls(n, type=schema.field("embedding").type)
    else:
        arrays["embedding"] = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), type=pa.float32()), dim)
    return pa.Table.from_arrays([arrays[name] for name in schema.names], schema=schema)
