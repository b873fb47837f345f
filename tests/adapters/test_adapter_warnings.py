"""Adapter warnings (issue 42 items 8 and 9): a ``file_path`` with control characters is escaped in
every GroundingWarning; ``node_boxes`` / ``chunk_of`` warn, as the splitters do, when the
metadata names a source that is no PDF (a text file, ``/dev/zero``); the warnings of the node parser
and the text splitter point at the user's line."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import pytest

from grounded.io.box_codec import GroundingWarning

HOSTILE = "notes\x1b[31m\nfake line\u202e.txt"


def _node(text: str, file_path: str):
    from llama_index.core.schema import TextNode

    return TextNode(text=text, metadata={"file_path": file_path})


def _document(text: str, source: str):
    from langchain_core.documents import Document

    return Document(page_content=text, metadata={"source": source})


@pytest.mark.parametrize("kind", ["text file", "/dev/zero"])
def test_node_boxes_and_chunk_from_store_warn_on_a_source_that_is_no_pdf(tmp_path: Path, kind: str) -> None:
    from grounded.metadata import chunk_of
    from llama_index_grounded import node_boxes

    if kind == "text file":
        path = tmp_path / "notes.txt"
        path.write_text("Dose adjustment in renal impairment.\n")
        name = str(path)
    else:
        name = "/dev/zero"
    node = _node("Dose adjustment in renal impairment.", name)
    doc = _document("Dose adjustment in renal impairment.", name)
    for call, item in [(node_boxes, node), (chunk_of, node), (chunk_of, doc)]:
        started = time.monotonic()
        with pytest.warns(GroundingWarning) as caught:
            result = call(item)
        assert time.monotonic() - started < 10  # /dev/zero is never read
        assert (result if isinstance(result, list) else result.geom) == []
        message = str(caught[0].message)
        assert "no boxes" in message and ("is not a PDF" in message or "is not a file here" in message), message


def test_control_characters_in_file_path_are_escaped_in_adapter_warnings(tmp_path: Path) -> None:
    from grounded.metadata import chunk_of
    from langchain_grounded import GroundedTextSplitter
    from llama_index_grounded import GroundedNodeParser, node_boxes

    text_file = tmp_path / HOSTILE
    text_file.write_text("Dose adjustment in renal impairment.\n")
    missing_pdf = str(tmp_path / "gone\x1b[2J\r.pdf")
    messages: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        node_boxes(_node("Dose adjustment.", str(text_file)))
        chunk_of(_document("Dose adjustment.", missing_pdf))
        GroundedTextSplitter(chunk_size=64).split_documents([_document("Dose adjustment in renal impairment.", missing_pdf)])
        from llama_index.core import Document

        GroundedNodeParser(chunk_size=64).get_nodes_from_documents(
            [Document(text="Dose adjustment in renal impairment.", metadata={"file_path": missing_pdf})]
        )
    messages = [str(w.message) for w in caught if issubclass(w.category, GroundingWarning)]
    assert len(messages) >= 4, messages
    for message in messages:
        assert not any(ch in message for ch in "\x1b\n\r\u202e"), repr(message)
    assert any("\\x1b" in m for m in messages)


def test_a_pdf_read_as_raw_bytes_is_refused_before_any_chunking(clinsci_pdf: Path) -> None:
    # issue 42 item 3: SimpleDirectoryReader without llama-index-readers-file reads a PDF as text (its bytes,
    # errors="ignore"): GroundedNodeParser grounded thousands of junk chunks for minutes
    from llama_index.core import Document

    from grounded.errors import GroundedError, NotTextError
    from llama_index_grounded import GroundedNodeParser

    raw = clinsci_pdf.read_bytes().decode("utf-8", errors="ignore")
    good = Document(text="Dose adjustment in renal impairment.", metadata={"file_name": "notes.txt"})
    bad = Document(text=raw, metadata={"file_path": str(clinsci_pdf), "file_name": clinsci_pdf.name})
    binary = Document(text="".join(chr(i % 32) for i in range(5000)), metadata={"file_name": "blob.bin"})
    for doc, cause in [(bad, "%PDF-"), (binary, "mostly binary")]:
        started = time.monotonic()
        with pytest.raises(NotTextError) as info:
            GroundedNodeParser(chunk_size=256).get_nodes_from_documents([good, doc])
        assert time.monotonic() - started < 10
        message = str(info.value)
        assert isinstance(info.value, GroundedError) and "\n" not in message
        assert cause in message and "pip install llama-index-readers-file" in message, message
        assert doc.metadata.get("file_path", doc.metadata["file_name"]) in message
    assert GroundedNodeParser(chunk_size=256).get_nodes_from_documents([good])  # text is unaffected


def test_the_text_splitter_refuses_raw_bytes_too(clinsci_pdf: Path) -> None:
    from langchain_core.documents import Document

    from grounded.errors import NotTextError
    from langchain_grounded import GroundedTextSplitter

    raw = Document(page_content=clinsci_pdf.read_bytes().decode("latin-1"), metadata={"source": str(clinsci_pdf)})
    with pytest.raises(NotTextError, match="%PDF-.*PyMuPDFLoader") as info:
        GroundedTextSplitter(chunk_size=128).split_documents([raw])
    assert str(clinsci_pdf) in str(info.value)


def _warned_at(call) -> list[tuple[str, int]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [(Path(w.filename).name, w.lineno) for w in caught if issubclass(w.category, GroundingWarning)]


def test_grounding_warnings_point_at_the_users_line(tmp_path: Path) -> None:
    # issue 42 item 8: reported at node_parser.py:261, not at the caller
    import inspect

    from llama_index.core import Document as LlamaDocument
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    from grounded.metadata import chunk_of
    from langchain_grounded import GroundedTextSplitter
    from llama_index_grounded import GroundedNodeParser, node_boxes

    text = "Dose adjustment in renal impairment. Monitor creatinine clearance weekly."
    gone = str(tmp_path / "gone.pdf")  # a PDF that is not there: one warning per call
    here = Path(__file__).name
    llama_doc = LlamaDocument(text=text, metadata={"file_path": gone})
    calls = {
        "get_nodes_from_documents": lambda: GroundedNodeParser(chunk_size=64).get_nodes_from_documents([llama_doc]),
        "parser(nodes)": lambda: GroundedNodeParser(chunk_size=64)([llama_doc]),
        "VectorStoreIndex.from_documents": lambda: VectorStoreIndex.from_documents(
            [llama_doc], transformations=[GroundedNodeParser(chunk_size=64)], embed_model=MockEmbedding(embed_dim=8)),
        "split_documents": lambda: GroundedTextSplitter(chunk_size=64).split_documents([_document(text, gone)]),
        "node_boxes": lambda: node_boxes(_node(text, gone)),
        "chunk_of": lambda: chunk_of(_document(text, gone)),
    }
    for name, call in calls.items():
        line = inspect.getsourcelines(call)[1]
        where = _warned_at(call)
        assert where, name
        assert all(w == (here, line) for w in where), (name, where, line)
