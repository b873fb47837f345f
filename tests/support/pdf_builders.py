"""PDF builders shared by the tests (PyMuPDF, or raw PDF syntax where PyMuPDF refuses to write it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pymupdf

__all__ = ["raw_pdf", "add_scanned_page", "paragraph_pages_pdf", "save_pdf"]


def raw_pdf(objects: Sequence[bytes]) -> bytes:
    """A PDF from object bodies (object 1 is the catalog) with a correct xref table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def add_scanned_page(doc: pymupdf.Document, src_page: pymupdf.Page, dpi: int) -> pymupdf.Page:
    """Append a page of ``src_page``'s size showing it rendered at ``dpi`` (a scan: no text layer)."""
    pixmap = src_page.get_pixmap(dpi=dpi)  # first: a new page of the same document invalidates src_page
    page = doc.new_page(width=src_page.rect.width, height=src_page.rect.height)
    page.insert_image(page.rect, pixmap=pixmap)
    return page


def paragraph_pages_pdf(path: Path, pages: Sequence[Sequence[tuple[str, float]]]) -> Path:
    """A PDF of default-size pages; each page's ``(text, top)`` paragraphs set 11 pt in a text box
    from x=72 to 520 and 120 pt high."""
    doc = pymupdf.open()
    for paragraphs in pages:
        page = doc.new_page()
        for text, top in paragraphs:
            page.insert_textbox(pymupdf.Rect(72, top, 520, top + 120), text, fontsize=11)
    doc.save(path)
    doc.close()
    return path


def save_pdf(doc: pymupdf.Document, path: Path, *, user_pw: str | None = None, owner_pw: str | None = None) -> Path:
    """Save ``doc`` (AES-256 encrypted when a password is given) and close it."""
    if user_pw is None and owner_pw is None:
        doc.save(path)
    else:
        doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=user_pw, owner_pw=owner_pw)
    doc.close()
    return path


def make_pdf(path, pages: int = 3, *, title: str = "Renal dosing guide", words: str = "clearance", password: str | None = None):
    """A constructed PDF: a heading and paragraphs per page, document metadata (title, author)."""
    doc = pymupdf.open()
    for p in range(pages):
        page = doc.new_page()
        page.insert_text((72, 72), f"{p + 1}. Dosing step {p + 1}", fontsize=15)
        y = 110
        for i in range(8):
            line = f"Paragraph {p}.{i}: reduce the dose when {words} falls below {30 - i} mL/min and monitor weekly."
            page.insert_text((72, y), line, fontsize=10)
            y += 14 if i % 3 else 30
    doc.set_metadata({"title": title, "author": "Grounded Tests", "creationDate": "D:20240102030405+01'00'"})
    return save_pdf(doc, path, user_pw=password, owner_pw=password and password + "-owner")


def figure_pdf(path: Path) -> Path:
    """A one-page PDF with two paragraphs, a striped raster figure and its caption (the pymupdf
    parser keeps it as a FIGURE element; ``--images`` writes its PNG)."""
    paragraph_pages_pdf(path, [[
        ("Stimulation of the receptor changes lipid uptake in cultured macrophages of the mouse.", 100),
        ("A second paragraph reports the measured concentrations over three weeks of treatment.", 500),
    ]])
    doc = pymupdf.open(path)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 200, 120), 0)
    pix.set_rect(pix.irect, (200, 30, 30))
    for x in range(0, 200, 10):
        pix.set_rect(pymupdf.IRect(x, 0, x + 5, 120), (20, 20, 200))
    doc[0].insert_image(pymupdf.Rect(100, 180, 400, 400), pixmap=pix)
    doc[0].insert_text((100, 420), "Figure 1. Uptake by dose.", fontsize=9)
    data = doc.tobytes()
    doc.close()
    path.write_bytes(data)
    return path
