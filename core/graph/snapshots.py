"""Page snapshots of a node graph (seed 002: "Page snapshots are then captured", kept with the page).

:func:`keep_snapshots` renders every Page node's page of the source PDF to a PNG in a folder the
caller gives and records a *reference* on the Page node - ``info.snapshot = {"path", "sha256",
"dpi", "width", "height"}`` - never the image bytes (node metadata goes to vector stores with small
metadata limits). Files are written atomically (temp file + rename: never half-written) and named
``<source key 12 hex>-p<page>-<dpi>dpi.png``, so a re-run over the same PDF reuses a file whose
sha256 matches and replaces one that does not. The PDF must be the one the graph was built from:
when the graph recorded the PDF's sha256 (``Document.metadata["sha256"]``) a different file is refused.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from ..errors import CorruptPDFError, InputError, InputNotFoundError
from ..io.atomic import atomic_write_bytes
from .nodes import NodeGraph, NodeKind

__all__ = ["keep_snapshots", "snapshot_name", "SNAPSHOT_KEY"]

SNAPSHOT_KEY = "snapshot"


def snapshot_name(source: str, page: int, dpi: int) -> str:
    """The file name of one page's snapshot."""
    return f"{source[:12]}-p{page:04d}-{dpi}dpi.png"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha256(path: Path) -> str | None:
    try:
        return _sha256(path.read_bytes())
    except OSError:
        return None


def keep_snapshots(
    graph: NodeGraph,
    pdf: str | os.PathLike[str] | bytes,
    folder: str | os.PathLike[str],
    *,
    dpi: int = 72,
    password: str | None = None,
) -> list[Path]:
    """Render each Page node's page of ``pdf`` (a path or the PDF bytes) at ``dpi`` into ``folder`` and
    put the reference on the Page node (see the module doc). Returns the snapshot paths in page order.
    Raises :class:`~grounded.errors.InputError` for a PDF that is not the graph's, cannot be opened or
    lacks one of the graph's pages, :class:`~grounded.errors.OutputError` when a file cannot be written."""
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not 18 <= dpi <= 600:
        raise ValueError(f"dpi must be an int in [18, 600], got {dpi!r}")
    import pymupdf

    name = "<bytes>" if isinstance(pdf, (bytes, bytearray)) else str(pdf)
    if not isinstance(pdf, (bytes, bytearray)) and not Path(pdf).is_file():
        raise InputNotFoundError(name, "no such file (the PDF to render page snapshots from)")
    data = bytes(pdf) if isinstance(pdf, (bytes, bytearray)) else Path(pdf).read_bytes()
    expected = graph.document.metadata.get("sha256")
    if expected and _sha256(data) != expected:
        raise InputError(name, f"is not the PDF this graph was built from (sha256 {_sha256(data)[:12]}…, "
                               f"the graph's {str(expected)[:12]}…)")
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except (RuntimeError, ValueError) as exc:  # pymupdf.FileDataError is a RuntimeError
        raise CorruptPDFError(name, f"cannot be opened to render page snapshots ({exc})") from None
    out_dir = Path(folder)
    written: list[Path] = []
    with doc:
        if doc.needs_pass and not doc.authenticate(password or ""):
            raise InputError(name, "the PDF needs a password to render page snapshots (pass password=...)")
        for page_node in graph.of_kind(NodeKind.PAGE):
            page = int(page_node.info.page)  # type: ignore[arg-type]  # every Page node has its number
            if not 1 <= page <= doc.page_count:
                raise InputError(name, f"has {doc.page_count} pages; the graph has page {page}")
            pixmap = doc[page - 1].get_pixmap(dpi=dpi, alpha=False)
            png = pixmap.tobytes("png")
            digest = _sha256(png)
            path = out_dir / snapshot_name(graph.source, page, dpi)
            if _file_sha256(path) != digest:
                atomic_write_bytes(path, png)
            reference: dict[str, Any] = {"path": str(path), "sha256": digest, "dpi": dpi,
                                         "width": pixmap.width, "height": pixmap.height}
            page_node.metadata[SNAPSHOT_KEY] = reference
            written.append(path)
    return written
