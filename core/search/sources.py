"""The indexed PDFs behind hits: read one (checked against the sha256 the rows record) and draw
hits on their pages (:func:`grounded.attribution.render`)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

from ..attribution import render_to_files
from ..errors import OutputError
from .errors import SourceChangedError
from .hit import Hit, hit_chunk

__all__ = ["source_pdf", "render_hits"]


def source_pdf(path: str, sha256: str) -> bytes:
    """The bytes of the indexed PDF ``path``; :class:`SourceChangedError` when it is gone or its
    sha256 is not ``sha256`` (the PDF changed since it was ingested: its boxes would be wrong).
    The bytes are read once and checked, so what is drawn on is exactly what was checked."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SourceChangedError(path, f"the indexed PDF cannot be read ({exc.strerror or exc}); re-run `grounded ingest`") from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256.lower():
        raise SourceChangedError(
            path, f"changed since it was indexed (sha256 {actual[:12]}... is not the indexed {sha256[:12]}...); "
            "re-run `grounded ingest` to index the new version"
        )
    return data


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def render_hits(
    hits: Sequence[Hit], directory: str | Path, *, dpi: int = 110, keep_out_of: str | Path | None = None
) -> list[Path]:
    """Write ``<rank>-<chunk id>-p<page>.png`` into ``directory`` (created) for every page of every hit,
    its line boxes drawn; returns the files written, in hit order. ``keep_out_of``: a folder the images
    must not go into (the ingest output: it holds only what ingest wrote)."""
    directory = Path(directory)
    if keep_out_of is not None and _inside(directory, Path(keep_out_of)):
        raise OutputError(directory, f"refusing to write images into the ingest output {keep_out_of}; choose another folder")
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    pdfs: dict[tuple[str, str], bytes] = {}
    for hit in hits:
        key = (hit.source_path, hit.source_sha256)
        if key not in pdfs:
            pdfs[key] = source_pdf(*key)
        name = re.sub(r"[^A-Za-z0-9._-]", "_", hit.chunk_id)
        written.extend(render_to_files(pdfs[key], hit_chunk(hit), directory / f"{hit.rank:02d}-{name}.png", dpi))
    return written
