"""When does the ingest LanceDB table need a vector index? Brute force vs IVF-HNSW-SQ by table size.

Run: ``python benchmarks/lancedb_vector_index.py [--sizes 2000 10000 50000] [--save docs/results/lancedb_vector_index.md]``
(about 8 minutes on 2 busy cores with the default sizes, most of it building the 50k index).

The table is the shape ``grounded ingest --sink lancedb --embed minilm`` writes (384-d unit
vectors, cosine), filled with seeded random unit vectors (clustered: 1000 centres plus noise,
like text embeddings, so an index has structure to exploit). Per size: the time to build the index
(:data:`grounded.ingest.lance_sink`'s ``HnswSq``, cosine), the median query time of brute force
and of the index (top 10, 30 queries near stored vectors, after one warm-up query) and the index's
recall@10 against brute force. The ingest builds the index from
``grounded.ingest.lance_sink.VECTOR_INDEX_MIN_ROWS`` rows: below that, brute force is exact and
the median query stays in the tens of milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def _vectors(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    centres = rng.standard_normal((1000, dim)).astype(np.float32)
    v = centres[rng.integers(0, 1000, n)] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _query_ms(table: object, queries: np.ndarray, **kw: object) -> tuple[float, list[list[int]]]:
    table.search(queries[0]).metric("cosine").limit(10).to_list()  # type: ignore[attr-defined]  # warm-up
    times, ids = [], []
    for q in queries:
        started = time.perf_counter()
        search = table.search(q).metric("cosine").limit(10)  # type: ignore[attr-defined]
        if kw.get("bypass"):
            search = search.bypass_vector_index()
        hits = search.to_list()
        times.append((time.perf_counter() - started) * 1000)
        ids.append([h["i"] for h in hits])
    return statistics.median(times), ids


def measure(n: int, dim: int = 384, queries: int = 30) -> dict[str, float]:
    import lancedb
    import pyarrow as pa
    from lancedb.index import HnswSq

    rng = np.random.default_rng(n)
    vectors = _vectors(n, dim, rng)
    table_data = pa.table({"i": pa.array(np.arange(n)), "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim)})
    probe = vectors[rng.integers(0, n, queries)] + 0.05 * rng.standard_normal((queries, dim)).astype(np.float32)
    with tempfile.TemporaryDirectory(prefix="grounded-lance-bench-") as folder:
        table = lancedb.connect(folder).create_table("chunks", data=table_data)
        brute_ms, exact = _query_ms(table, probe, bypass=True)
        started = time.perf_counter()
        table.create_index("vector", config=HnswSq(distance_type="cosine"))
        build_s = time.perf_counter() - started
        index_ms, approx = _query_ms(table, probe)
    recall = statistics.mean(len(set(a) & set(e)) / 10 for a, e in zip(approx, exact, strict=True))
    return {"rows": n, "brute_ms": brute_ms, "build_s": build_s, "index_ms": index_ms, "recall": recall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 10_000, 50_000])
    parser.add_argument("--save", type=Path, default=None)
    args = parser.parse_args()
    from grounded.ingest.lance_sink import VECTOR_INDEX_MIN_ROWS

    lines = [
        "| rows | brute force, median ms | index build, s | IVF-HNSW-SQ, median ms | recall@10 of the index |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n in args.sizes:
        r = measure(n)
        lines.append(f"| {r['rows']:,} | {r['brute_ms']:.1f} | {r['build_s']:.1f} | {r['index_ms']:.1f} | {r['recall']:.3f} |")
        print(lines[-1], flush=True)
    text = (
        "# LanceDB: brute force vs a vector index by table size\n\n"
        "`python benchmarks/lancedb_vector_index.py` (384-d clustered unit vectors, cosine, top 10, "
        "30 queries; 2 shared, busy cores).\n"
        f"The ingest builds the index from `VECTOR_INDEX_MIN_ROWS` = {VECTOR_INDEX_MIN_ROWS:,} rows.\n\n"
        + "\n".join(lines) + "\n"
    )
    print(text)
    if args.save:
        args.save.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
