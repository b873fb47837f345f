"""Arrow schemas of the ingest output and the conversion of chunks to rows.

One row per chunk (``chunks/part-*.parquet``); boxes are a nested column: a list of
``struct{page, left, top, right, bottom, mode, heading, element_id, spans: list<struct{left, top,
right, bottom}>}`` (LTRB fractions of the page, origin top-left, as in
:class:`grounded.ParsingBoundingBox`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import BackendUnavailableError
from ..model.chunk import Chunk


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


def embedding_type(dim: int | None) -> Any:
    """The ``embedding`` column's type: ``FixedSizeList<float32>[dim]`` (DuckDB reads it as
    ``FLOAT[dim]``, LanceDB as a vector), or a (null) variable list when the run does not embed."""
    pa = _pa()
    return pa.list_(pa.float32()) if dim is None else pa.list_(pa.float32(), dim)


def chunk_schema(dim: int | None = None) -> Any:
    """The schema of the chunk rows; ``dim``: the embedding size of the run (None: no embeddings)."""
    pa = _pa()
    return pa.schema(
        [
            ("chunk_id", pa.string()),
            ("text", pa.string()),
            ("body", pa.string()),
            ("start_char", pa.int64()),
            ("end_char", pa.int64()),
            ("pages", pa.list_(pa.int32())),
            ("boxes", pa.list_(box_type())),
            ("heading_path", pa.list_(pa.string())),
            ("element_ids", pa.list_(pa.string())),
            ("token_count", pa.int32()),
            ("source_path", pa.string()),
            ("source_sha256", pa.string()),
            ("config_fingerprint", pa.string()),
            ("strategy", pa.string()),
            ("embedding", embedding_type(dim)),
        ]
    )


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


def _box(b: Any) -> dict[str, Any]:
    return {
        "page": int(b.page),
        "left": float(b.left),
        "top": float(b.top),
        "right": float(b.right),
        "bottom": float(b.bottom),
        "mode": b.mode,
        "heading": bool(b.is_heading),
        "element_id": b.element_id,
        "spans": [
            {"left": float(s.left), "top": float(s.top), "right": float(s.right), "bottom": float(s.bottom)}
            for s in b.spans
        ],
    }


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
    columns: dict[str, list[Any]] = {name: [] for name in chunk_schema(dim).names}
    for c in chunks:
        meta = c.metadata
        columns["chunk_id"].append(c.id)
        columns["text"].append(c.content)
        columns["body"].append(c.body)
        columns["start_char"].append(int(meta.get("start_char", 0)))
        columns["end_char"].append(int(meta.get("end_char", 0)))
        columns["pages"].append([int(p) for p in (meta.get("pages") or c.pages)])
        columns["boxes"].append([_box(b) for b in c.geom])
        columns["heading_path"].append([str(h) for h in meta.get("heading_path") or []])
        columns["element_ids"].append([str(e) for e in meta.get("element_ids") or []])
        columns["token_count"].append(int(meta.get("token_count", 0)))
        columns["source_path"].append(source_path)
        columns["source_sha256"].append(source_sha256)
        columns["config_fingerprint"].append(config_fingerprint)
        columns["strategy"].append(str(meta.get("strategy", "")))
    schema = chunk_schema(dim)
    arrays = {name: pa.array(values, type=schema.field(name).type) for name, values in columns.items() if name != "embedding"}
    n = len(chunks)
    if vectors is None:
        arrays["embedding"] = pa.nulls(n, type=schema.field("embedding").type)
    else:
        arrays["embedding"] = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), type=pa.float32()), dim)
    return pa.Table.from_arrays([arrays[name] for name in schema.names], schema=schema)
