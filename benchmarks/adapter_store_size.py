"""What the adapters persist: LlamaIndex nodes, docstore, ingestion cache and Chroma store vs. the
same PDF through LangChain into Chroma (issue 9: the parse tree must never travel into a node).

Run: ``python benchmarks/adapter_store_size.py [--pdf X.pdf] [--save docs/results/adapter_store_size.md]``.
One PDF (default the shared 13-page ``cermine_web_example3_clinsci.pdf``), recursive strategy,
N=256 tokens, line boxes kept, default (flat) metadata; both stores get the same MiniLM vectors of
their chunk texts (``--vectors zeros`` skips the model: store sizes barely depend on the values).

Printed: node count, median/max ``len(node.to_json())`` (target <= 6 KB), the persisted docstore,
ingestion cache (an ``IngestionPipeline`` with docstore + cache), LlamaIndex Chroma and LangChain
Chroma folder sizes and their ratio (target <= 1.5x), and a check that no persisted file, node,
relationship or cache entry contains the parse tree (the run fails otherwise).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PDF = REPO.parent / "shared" / "data" / "long" / "cermine_web_example3_clinsci.pdf"
SCRIPT = "benchmarks/adapter_store_size.py"
N = 256
#: the parse tree in any serialized form (lossless JSON, compressed metadata form, its key, char extents)
TREE_MARKERS = (b"grounded.parsing_result", b'"z2:', b'"grounded_tree"', b"char_x")


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def tree_hits(path: Path) -> list[str]:
    hits = []
    for f in path.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            hits += [f"{f.name}: {m.decode()}" for m in TREE_MARKERS if m in data]
    return hits


def kb(n: float) -> str:
    return f"{n / 1024:,.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:,.2f} MB"


def embedder(kind: str):  # -> callable texts -> list of vectors
    if kind == "zeros":
        return lambda texts: [[0.0] * 383 + [1.0] for _ in texts]
    from grounded.chunking.strategies.semantic import minilm_embedder

    embed = minilm_embedder()
    return lambda texts: [list(map(float, v)) for v in embed(list(texts))]


def run(pdf: Path, vectors: str, work: Path) -> list[str]:
    import chromadb
    from langchain_chroma import Chroma
    from langchain_core.embeddings import Embeddings
    from llama_index.core.ingestion import DocstoreStrategy, IngestionCache, IngestionPipeline
    from llama_index.core.schema import MetadataMode
    from llama_index.core.storage.docstore import SimpleDocumentStore
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from langchain_grounded import GroundedPDFLoader
    from llama_index_grounded import GroundedNodeParser, GroundedPDFReader

    embed = embedder(vectors)
    started = time.perf_counter()
    docs = GroundedPDFReader().load_data(pdf)
    parser = GroundedNodeParser(strategy="recursive", max_tokens=N)
    nodes = parser.get_nodes_from_documents(docs)
    sizes = [len(n.to_json()) for n in nodes]  # as the node parser returns them (no vector yet)
    # docstore (the nodes, as VectorStoreIndex keeps them) + ingestion cache as an IngestionPipeline persists them
    docstore = SimpleDocumentStore()
    docstore.add_documents(nodes)
    docstore.persist(str(work / "docstore" / "docstore.json"))
    pipeline = IngestionPipeline(
        transformations=[parser],
        docstore=SimpleDocumentStore(),
        cache=IngestionCache(),
        docstore_strategy=DocstoreStrategy.DUPLICATES_ONLY,  # no vector store here: upserts do not apply
    )
    pipeline.run(documents=docs)
    pipeline.persist(str(work / "pipeline"))
    for node, vec in zip(nodes, embed([n.get_content(MetadataMode.EMBED) for n in nodes]), strict=True):
        node.embedding = vec

    # LlamaIndex -> Chroma (official integration), persisted
    li_store = ChromaVectorStore(chroma_collection=chromadb.PersistentClient(path=str(work / "li_chroma")).get_or_create_collection("grounded"))
    li_store.add(nodes)

    # LangChain loader -> langchain-chroma, persisted, same kind of vectors
    class _Vectors(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embed(texts)

        def embed_query(self, text: str) -> list[float]:
            return embed([text])[0]

    lc_docs = GroundedPDFLoader(pdf, strategy="recursive", max_tokens=N).load()
    Chroma.from_documents(lc_docs, _Vectors(), persist_directory=str(work / "lc_chroma"), collection_name="grounded")
    elapsed = time.perf_counter() - started

    li_size, lc_size = folder_size(work / "li_chroma"), folder_size(work / "lc_chroma")
    hits = tree_hits(work)
    for node in nodes:
        blob = node.to_json().encode()
        hits += [f"node {node.node_id}: {m.decode()}" for m in TREE_MARKERS if m in blob]
    lines = [
        f"PDF: `{pdf.name}` ({docs[0].metadata['total_pages']} pages), recursive N={N}, line boxes, flat metadata, "
        f"vectors: {vectors}",
        "",
        "| measure | value | target |",
        "|---|---|---|",
        f"| LlamaIndex nodes / LangChain chunks | {len(nodes)} / {len(lc_docs)} | |",
        f"| median `len(node.to_json())` | {statistics.median(sizes) / 1024:.1f} KB | <= 6 KB |",
        f"| max `len(node.to_json())` | {max(sizes) / 1024:.1f} KB | |",
        f"| reader Document JSON (text written twice by LlamaIndex) | {kb(len(docs[0].to_json()))} | |",
        f"| docstore.json (nodes) | {kb(folder_size(work / 'docstore'))} | |",
        f"| IngestionPipeline persist (docstore + cache) | {kb(folder_size(work / 'pipeline'))} | |",
        f"| LlamaIndex Chroma (persisted) | {kb(li_size)} | |",
        f"| LangChain Chroma (persisted) | {kb(lc_size)} | |",
        f"| LlamaIndex / LangChain Chroma | {li_size / lc_size:.2f}x | <= 1.5x |",
        f"| files or nodes containing the parse tree | {len(hits)} | 0 |",
        "",
        f"({elapsed:.0f} s including parsing or the parse cache lookup and {vectors} vectors)",
    ]
    if hits:
        lines.append("tree found in: " + "; ".join(hits[:10]))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pdf", type=Path, default=DEFAULT_PDF)
    ap.add_argument("--vectors", choices=("minilm", "zeros"), default="minilm")
    ap.add_argument("--save", type=Path, help="also write the table as Markdown, e.g. docs/results/adapter_store_size.md")
    args = ap.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with tempfile.TemporaryDirectory(prefix="grounded-store-size-") as tmp:
        lines = run(args.pdf, args.vectors, Path(tmp))
    print("\n".join(lines))
    if args.save:
        from grounded.serialization import atomic_write_text

        atomic_write_text(args.save, "\n".join([f"# Adapter store size (`python {SCRIPT} --save {args.save}`)", "", *lines, ""]))
        print(f"\nwritten {args.save}")
    failed = any(line.startswith("tree found") for line in lines)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
