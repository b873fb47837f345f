"""Documents whose "text" is a file's raw bytes: LlamaIndex's ``SimpleDirectoryReader`` without
``llama-index-readers-file`` reads a PDF as text (0.3-1 M characters of ``%PDF-1.7 ... stream``),
which a splitter would "ground" for minutes into thousands of junk chunks. :func:`refuse_raw_bytes`
refuses such a text before any chunking, naming the file and the fix."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import NotTextError

__all__ = ["raw_bytes_reason", "refuse_raw_bytes", "READER_HINTS", "BINARY_SHARE", "SAMPLE"]

#: characters of a text's head that are looked at
SAMPLE = 65536
#: share of control (other than whitespace) and replacement characters above which a text is binary
BINARY_SHARE = 0.10
_WHITESPACE = frozenset("\n\r\t\f\v")


def raw_bytes_reason(text: str) -> str | None:
    """Why ``text`` is a file's raw bytes rather than text (``None``: it is text): it starts with the
    PDF header ``%PDF-``, or more than :data:`BINARY_SHARE` of its first :data:`SAMPLE` characters
    are control or U+FFFD replacement characters."""
    head = text[:SAMPLE]
    if head.lstrip("\ufeff \t\r\n\x00").startswith("%PDF-"):
        return "its text is the raw bytes of a PDF (it starts with %PDF-), not the PDF's text"
    if len(head) >= 64:
        binary = sum(1 for ch in head if (ord(ch) < 32 and ch not in _WHITESPACE) or 0x7F <= ord(ch) < 0xA0 or ch == "\ufffd")
        if binary > BINARY_SHARE * len(head):
            return (f"its text is mostly binary ({binary / len(head):.0%} control or replacement characters): a file's "
                    "raw bytes, not text")
    return None


#: per framework: the fix named when one of its Documents is a file's raw bytes
READER_HINTS = {
    "llama_index": "SimpleDirectoryReader reads PDFs as text only with llama-index-readers-file: pip install "
                   "llama-index-readers-file (grounded[llama-index] brings it), or read them with GroundedPDFReader",
    "langchain": "load PDFs with a PDF loader (PyMuPDFLoader of langchain-community, which grounded[langchain] brings, "
                 "or GroundedPDFLoader), not as text",
}


def refuse_raw_bytes(items: Iterable[tuple[str, Mapping[str, Any], str]], framework: str) -> None:
    """Raise :class:`~grounded.errors.NotTextError` for the first ``(text, metadata, id)`` whose text is
    raw bytes (:func:`raw_bytes_reason`), naming the file (``file_path``, ``source`` or ``file_name``
    of the metadata, else the id) and the fix of ``framework`` (:data:`READER_HINTS`). Called on all
    the Documents of a call before any is chunked."""
    for text, metadata, fallback in items:
        reason = raw_bytes_reason(text)
        if reason is not None:
            name = next((str(metadata[k]) for k in ("file_path", "source", "file_name") if metadata.get(k)), fallback)
            raise NotTextError(name, f"{reason}; {READER_HINTS[framework]}")
