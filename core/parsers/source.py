"""What a parser is given -> a checked PDF file a backend can open by path (issue #9.7).

``BaseParser.run`` accepts a path, PDF bytes or a binary file object, and an optional password.
Every backend keeps reading a plain, unencrypted file by path:

* bytes / file objects are written to a private temporary directory (mode 0700, in the system
  temp dir, never the user's folders) named ``grounded-source-<pid>-*``
  (:func:`grounded.io.atomic.make_temp_dir`: a folder a killed run left is removed by the next run);
* an encrypted PDF opened with the right password is saved decrypted into that directory;
* the directory is removed when the parse ends, also on error.

Errors that name a temporary file are renamed to what the caller gave (the path, the ``name=``
given with bytes, or ``<bytes>``), and :meth:`PreparedSource.stamp` records the *original*
source in the tree's root metadata: path/name, the sha256 of the original bytes and
``encrypted: true`` for a PDF that needed a password.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..errors import CorruptPDFError, InputError
from ..io.atomic import make_temp_dir
from ..model.element_info import RootInfo
from .pdf_input import PDFInfo, inspect_pdf

__all__ = ["PDFSource", "PreparedSource", "prepared_source", "BYTES_NAME"]

#: a path, PDF bytes, or a binary file object (anything with ``.read()`` returning bytes)
PDFSource = str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes]
#: source name recorded for bytes given without ``name=``
BYTES_NAME = "<bytes>"
_MAX_NAME = 120  # characters of the temp file's name (file systems allow 255 bytes)
#: name prefix of the temporary folders of byte inputs and decrypted copies
TEMP_PREFIX = "grounded-source-"


@dataclass
class PreparedSource:
    """A PDF ready for a backend: ``info.path`` is the file to read (the original path, or a
    temporary copy); ``display`` is what messages and metadata call the input."""

    info: PDFInfo
    display: str
    name: str
    sha256: str
    encrypted: bool
    from_bytes: bool
    temp_paths: tuple[str, ...] = ()

    def stamp(self, info: RootInfo) -> None:
        """Record the original source in a root's ``info.source`` (replaces what ``finish`` wrote
        from the temporary copy)."""
        source = dict(info.source or {})
        source.update({"path": self.display, "sha256": self.sha256, "name": self.name})
        if self.info.doc_info:
            source["info"] = dict(self.info.doc_info)  # grounded.metadata.SOURCE_INFO_KEY
        if self.encrypted:
            source["encrypted"] = True
        if self.from_bytes:
            source["from_bytes"] = True
        info.source = source

    def rename(self, exc: InputError) -> None:
        """Make an error about a temporary file name the input the caller gave."""
        if not self.temp_paths:
            return
        cause = exc.cause
        for temp in self.temp_paths:
            cause = cause.replace(temp, self.display)
        if exc.path in self.temp_paths or cause != exc.cause:
            exc.path, exc.cause = self.display, cause
            exc.args = (f"{self.display}: {cause}",)


def _read_stream(pdf: Any, display: str) -> bytes:
    if isinstance(pdf, (bytes, bytearray, memoryview)):
        return bytes(pdf)
    read = getattr(pdf, "read", None)
    if not callable(read):
        raise TypeError(
            f"pdf must be a path, PDF bytes or a binary file object with .read(), not {type(pdf).__name__}"
        )
    data = read()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{display}: the file object returned {type(data).__name__}, not bytes (open it with 'rb')")
    return bytes(data)


def _file_name(name: str | None) -> str:
    """A safe temp file name keeping the caller's base name (image file names use its stem)."""
    base = Path(str(name or "")).name.strip() if name else ""
    if base in ("", ".", "..") or base == BYTES_NAME:
        base = "document.pdf"
    stem, suffix = (base[:-4], base[-4:]) if base.lower().endswith(".pdf") else (base, ".pdf")
    stem = "".join(c if c.isprintable() and c not in '\\/:*?"<>|' else "_" for c in stem)[:_MAX_NAME] or "document"
    return stem + suffix


def _decrypt(src: Path, password: str, target: Path, display: str) -> None:
    import pymupdf

    try:
        with pymupdf.open(src) as doc:
            if not doc.authenticate(password):  # inspect_pdf accepted it: cannot happen
                raise CorruptPDFError(display, "encrypted PDF: the password stopped working")
            doc.save(target, encryption=pymupdf.PDF_ENCRYPT_NONE)  # type: ignore[attr-defined]
    except InputError:
        raise
    except Exception as exc:  # MuPDF's own errors while writing the decrypted copy
        raise CorruptPDFError(display, f"encrypted PDF: cannot write a decrypted copy ({exc})") from exc


@contextlib.contextmanager
def prepared_source(
    pdf: PDFSource,
    *,
    require_text: bool,
    password: str | None = None,
    name: str | None = None,
) -> Iterator[PreparedSource]:
    """Check ``pdf`` (see the module docstring) and yield a :class:`PreparedSource`; temporary
    files are removed on exit. Raises the typed errors of :func:`inspect_pdf`."""
    if password is not None and not isinstance(password, str):
        raise TypeError(f"password must be a str, not {type(password).__name__}")
    scratch: tempfile.TemporaryDirectory[str] | None = None
    prepared: PreparedSource | None = None
    try:
        if isinstance(pdf, (str, os.PathLike)):
            path = Path(pdf)
            display, from_bytes = str(path), False
            shown_name = path.name
        else:
            if name is None:  # an open file knows its name
                attr = getattr(pdf, "name", None)
                name = attr if isinstance(attr, str) and attr and not attr.startswith("<") else None
            display = name if name else BYTES_NAME
            shown_name = Path(name).name if name else BYTES_NAME
            data = _read_stream(pdf, display)
            scratch = make_temp_dir(TEMP_PREFIX)
            path = Path(scratch.name) / _file_name(name)
            path.write_bytes(data)
            from_bytes = True
        temps = (str(path),) if from_bytes else ()
        prepared = PreparedSource(
            info=PDFInfo(path=path, sha256="", page_count=0),
            display=display,
            name=shown_name,
            sha256="",
            encrypted=False,
            from_bytes=from_bytes,
            temp_paths=temps,
        )
        info = inspect_pdf(path, require_text, password=password)
        prepared.sha256 = info.sha256
        prepared.encrypted = info.encrypted
        if info.encrypted:
            assert password is not None  # inspect_pdf refuses an encrypted PDF without one
            if scratch is None:
                scratch = make_temp_dir(TEMP_PREFIX)
            plain_dir = Path(scratch.name) / "decrypted"
            plain_dir.mkdir()
            plain = plain_dir / _file_name(shown_name)
            _decrypt(path, password, plain, display)
            info = dataclasses.replace(info, path=plain)  # sha256 stays the original file's
            prepared.temp_paths = (*temps, str(plain))
        prepared.info = info
        yield prepared
    except InputError as exc:
        if prepared is not None:
            prepared.rename(exc)
        raise
    finally:
        if scratch is not None:
            with contextlib.suppress(OSError):  # as rmtree(ignore_errors=True): never mask the parse's outcome
                scratch.cleanup()
