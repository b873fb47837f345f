"""What a file that is not a PDF is, from its first bytes: a type name for messages.

Messages about an input must never quote its content (a ``/etc/passwd`` given by mistake would
land in ``errors.parquet`` and logs): :func:`describe_type` returns a media type or format name
("text/plain", "PNG image", "ZIP archive (also DOCX/XLSX/EPUB)"), never the bytes themselves.
"""

from __future__ import annotations

__all__ = ["describe_type"]

#: (offset, signature, name)
_MAGIC: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "PNG image"),
    (0, b"\xff\xd8\xff", "JPEG image"),
    (0, b"GIF87a", "GIF image"),
    (0, b"GIF89a", "GIF image"),
    (0, b"II*\x00", "TIFF image"),
    (0, b"MM\x00*", "TIFF image"),
    (0, b"BM", "BMP image"),
    (8, b"WEBP", "WebP image"),
    (0, b"PK\x03\x04", "ZIP archive (also DOCX/XLSX/PPTX/EPUB)"),
    (0, b"PK\x05\x06", "ZIP archive (empty)"),
    (0, b"\x1f\x8b", "gzip archive"),
    (0, b"BZh", "bzip2 archive"),
    (0, b"\xfd7zXZ\x00", "xz archive"),
    (0, b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (0, b"Rar!\x1a\x07", "RAR archive"),
    (0, b"\x28\xb5\x2f\xfd", "zstd archive"),
    (257, b"ustar", "tar archive"),
    (0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "OLE2 document (legacy DOC/XLS/PPT)"),
    (0, b"{\\rtf", "RTF document"),
    (0, b"\x7fELF", "ELF executable"),
    (0, b"MZ", "Windows executable"),
    (0, b"%!PS", "PostScript document"),
    (0, b"AT&TFORM", "DjVu document"),
    (0, b"SQLite format 3\x00", "SQLite database"),
    (0, b"PAR1", "Parquet file"),
    (4, b"ftyp", "MP4/QuickTime media"),
    (0, b"ID3", "MP3 audio"),
    (0, b"OggS", "Ogg media"),
    (0, b"fLaC", "FLAC audio"),
    (0, b"\x1aE\xdf\xa3", "Matroska/WebM media"),
    (0, b"RIFF", "RIFF media (WAV/AVI)"),
)

_TEXT_KINDS: tuple[tuple[bytes, str], ...] = (
    (b"<!doctype html", "text/html"),
    (b"<html", "text/html"),
    (b"<?xml", "XML (text/xml)"),
    (b"<svg", "SVG image"),
    (b"{", "text (JSON?)"),
    (b"[", "text (JSON?)"),
)


def describe_type(data: bytes) -> str:
    """A type name for ``data`` (a file's first bytes; a few KB are enough): a known format's
    name, ``text/plain`` (with its encoding when it is not ASCII), or ``binary data``."""
    if not data:
        return "empty"
    for offset, signature, name in _MAGIC:
        if data[offset : offset + len(signature)] == signature:
            return name
    head = data[:4096]
    if head.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return "text/plain (Unicode with a byte-order mark)"
    if b"\x00" in head:
        return "binary data"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the window's end
            return "binary data" if sum(b < 9 or 13 < b < 32 for b in head) > len(head) // 20 else "text/plain (8-bit)"
        text = head[: exc.start].decode("utf-8")
    lowered = text.lstrip().lower().encode()
    for prefix, name in _TEXT_KINDS:
        if lowered.startswith(prefix):
            return name
    if sum(ord(c) < 9 or 13 < ord(c) < 32 for c in text) > len(text) // 20:
        return "binary data"
    return "text/plain" if text.isascii() else "text/plain (UTF-8)"
