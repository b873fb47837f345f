"""PDF builders shared by the tests (PyMuPDF, or raw PDF syntax where PyMuPDF refuses to write it)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pymupdf

__all__ = [
    "raw_pdf",
    "add_scanned_page",
    "paragraph_pages_pdf",
    "save_pdf",
    "short_text_pdf",
    "heading_pages_pdf",
    "broken_font_pdf",
    "many_operators_pdf",
    "bitmap_page_pdf",
    "noise_images_pdf",
    "noise_image_pdf",
    "type3_font_pdf",
    "chart_page_pdf",
    "side_by_side_tables_pdf",
]


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


def short_text_pdf(path: Path, width: float, height: float, text: str, fontsize: float, at: tuple[float, float]) -> Path:
    """One ``width`` x ``height`` pt page holding only ``text`` at ``at`` (a tiny page, a one-word page)."""
    doc = pymupdf.open()
    doc.new_page(width=width, height=height).insert_text(at, text, fontsize=fontsize)
    return save_pdf(doc, path)


def heading_pages_pdf(path: Path, pages: int, *, top: float = 30, heading_size: float = 12, gap: float = 14) -> Path:
    """``pages`` pages whose first line is "Heading N" (``heading_size`` pt Helvetica at ``top``) over
    a paragraph of 11 pt body text: generated fuzz pages; a layout model calls some of these first
    lines page headers."""
    doc = pymupdf.open()
    body = "Some body text of the page that runs on and on. " * 30
    for k in range(pages):
        page = doc.new_page()
        page.insert_text((72, top), f"Heading {k + 1}", fontsize=heading_size)
        page.insert_textbox(pymupdf.Rect(72, top + gap, 540, 700), body, fontsize=11)
    return save_pdf(doc, path)


def broken_font_pdf(path: Path, rows: int = 20) -> Path:
    """A page of ``rows`` lines set in an embedded (Flate-compressed) font whose stream has 40 bytes
    flipped in its middle: MuPDF reads the text but logs ``zlib error`` / ``FT_Load_Glyph ... broken file``."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_font(fontname="F1", fontbuffer=pymupdf.Font("tiro").buffer)
    for i in range(rows):
        page.insert_text((72, 72 + 20 * i), f"Row {i} of the damaged font table with several words", fontname="F1", fontsize=11)
    raw = doc.tobytes(deflate=True, garbage=3)
    check = pymupdf.open("pdf", raw)
    xref = next(x for x in range(1, check.xref_length()) if check.xref_get_key(x, "Length1")[0] != "null")
    stream = check.xref_stream_raw(xref)
    start = raw.find(stream[:64]) + len(stream) // 3
    data = bytearray(raw)
    for k in range(start, start + 40):
        data[k] ^= 0x5A
    path.write_bytes(bytes(data))
    return path


def many_operators_pdf(path: Path, operators: int, *, per_line: int = 100, fontsize: float = 4) -> Path:
    """One letter-size page of ``operators`` text-showing operators (``Tj``), each a short word, set
    ``per_line`` to a line in ``fontsize`` pt Helvetica: a hostile page of very many text spans
    (written as raw content: PyMuPDF's insert_text would take minutes)."""
    lines = -(-operators // per_line)
    step = 640 / max(lines, 1)  # lines from y=700 down to 60: off the page's margin band
    ops = [b"BT /F1 %g Tf" % fontsize]
    for i in range(operators):
        row, col = divmod(i, per_line)
        ops.append(b"1 0 0 1 %.2f %.2f Tm (w%d) Tj" % (50 + col * (500 / per_line), 700 - row * step, i % 10))
    ops.append(b"ET")
    content = b"\n".join(ops)
    return _write(path, raw_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]))


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def bitmap_page_pdf(path: Path, pixels: int, lines: Sequence[str], *, fontsize: float = 28) -> Path:
    """A scan without a text layer: one page showing a ``pixels`` x ``pixels`` 1-bit image (a
    compressed "OCR bomb": a few KB of file) with ``lines`` of text drawn large in its top part."""
    src = pymupdf.open()
    page = src.new_page(width=612, height=612)
    for i, line in enumerate(lines):
        page.insert_text((40, 80 + i * fontsize * 1.6), line, fontsize=fontsize)
    small = page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
    scale = pixels / small.width
    pix = page.get_pixmap(matrix=pymupdf.Matrix(scale, scale), colorspace=pymupdf.csGRAY)
    # 1-bit: threshold to black/white and store as a CCITT-free PNG-less bilevel image via PIL
    from PIL import Image

    image = Image.frombytes("L", (pix.width, pix.height), pix.samples).point(lambda v: 255 if v > 128 else 0).convert("1")
    del pix
    import io

    buf = io.BytesIO()
    image.save(buf, format="TIFF", compression="group4")
    doc = pymupdf.open()
    doc.new_page(width=612, height=612).insert_image(pymupdf.Rect(0, 0, 612, 612), stream=buf.getvalue())
    return save_pdf(doc, path)


def _scanned_lines(page: pymupdf.Page, lines: Sequence[str], *, fontsize: float = 20, top: float = 40) -> float:
    """Draw ``lines`` on ``page`` as one image (no text layer) from ``top``; returns the y below them."""
    if not lines:
        return 0.0
    height = top + len(lines) * fontsize * 1.6 + 10
    src = pymupdf.open()
    band = src.new_page(width=page.rect.width, height=height)
    for i, line in enumerate(lines):
        band.insert_text((40, top + fontsize + i * fontsize * 1.6), line, fontsize=fontsize)
    pix = band.get_pixmap(dpi=200, colorspace=pymupdf.csGRAY)
    page.insert_image(pymupdf.Rect(0, 0, page.rect.width, height), pixmap=pix)
    return height


def noise_images_pdf(
    path: Path, images: int, *, seed: int = 0, size: int = 24, lines: Sequence[str] = ()
) -> Path:
    """A page tiled with ``images`` small random-noise images and no text layer: OCR reads garbage.
    ``lines``: text drawn as an image (a scanned band, no text layer) above the noise."""
    import numpy as np

    rng = np.random.default_rng(seed)
    doc = pymupdf.open()
    page = doc.new_page()
    top = _scanned_lines(page, lines)
    per_row = max(1, int((images * 612 / 792) ** 0.5))
    cell = 612 / per_row
    for i in range(images):
        row, col = divmod(i, per_row)
        samples = (rng.random((size, size)) > 0.5).astype("uint8") * 255
        pix = pymupdf.Pixmap(pymupdf.csGRAY, size, size, samples.tobytes(), False)
        y = top + row * cell * (page.rect.height - top) / page.rect.height
        page.insert_image(pymupdf.Rect(col * cell, y, (col + 1) * cell, y + cell), pixmap=pix)
    return save_pdf(doc, path)


def noise_image_pdf(path: Path, pixels: int, *, seed: int = 0, lines: Sequence[str] = ()) -> Path:
    """One ``pixels`` x ``pixels`` black-and-white random-noise image (no text layer) filling the
    page below ``lines`` (text drawn as an image above it): a single huge image of noise."""
    import numpy as np

    rng = np.random.default_rng(seed)
    doc = pymupdf.open()
    page = doc.new_page()
    top = _scanned_lines(page, lines)
    samples = (rng.random((pixels, pixels)) > 0.5).astype("uint8") * 255
    pix = pymupdf.Pixmap(pymupdf.csGRAY, pixels, pixels, samples.tobytes(), False)
    page.insert_image(pymupdf.Rect(0, top, page.rect.width, page.rect.height), pixmap=pix, keep_proportion=False)
    return save_pdf(doc, path)


def type3_font_pdf(path: Path, names: Sequence[str], *, body: str, shown: str, to_unicode: bool = False) -> Path:
    """A letter page of ``body`` in Helvetica and a line ``shown`` (codes from 65 = "A") in a Type 3
    font whose glyphs (filled boxes) are named ``names`` by its /Encoding /Differences from code 65,
    with a ToUnicode CMap (to A, B, ...) when ``to_unicode`` (PyMuPDF cannot write a Type 3 font)."""
    box = b"500 0 0 0 500 700 d1 50 0 400 700 re f"
    content = b"BT /F1 11 Tf 72 700 Td (%s) Tj ET\nBT /F2 11 Tf 72 670 Td (%s) Tj ET" % (body.encode(), shown.encode())
    n = len(names)
    procs = b" ".join(b"/%s 7 0 R" % name.encode() for name in names)
    cmap = (b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /T3 def "
            b"1 begincodespacerange <00> <FF> endcodespacerange %d beginbfchar " % n
            + b" ".join(b"<%02X> <%04X>" % (65 + k, 65 + k) for k in range(n))
            + b" endbfchar endcmap CMapName currentdict /CMap defineresource pop end end")
    unicode_ref = b" /ToUnicode 8 0 R" if to_unicode else b""
    return _write(path, raw_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R /F2 6 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Font /Subtype /Type3 /FontBBox [0 0 500 700] /FontMatrix [0.001 0 0 0.001 0 0] "
        b"/CharProcs << " + procs + b" >> /Encoding << /Type /Encoding /Differences [65 "
        + b" ".join(b"/" + name.encode() for name in names) + b"] >> /FirstChar 65 /LastChar %d /Widths [%s] "
        % (64 + n, b" ".join([b"500"] * n)) + b"/Resources << >>" + unicode_ref + b" >>",
        b"<< /Length %d >>\nstream\n" % len(box) + box + b"\nendstream",
        b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream",
    ]))


CHART_LABELS = ("serum level", "dose 10 mg", "dose 20 mg", "placebo arm", "week 12")
CHART_LEGEND = ("Legend: treated patients", "Legend: control patients", "Legend: dropped out")
CHART_CAPTION = "Figure 3. Serum levels over twelve weeks by dose group."


def chart_page_pdf(path: Path, *, sideways: bool) -> Path:
    """A letter page that is one vector chart (frame, a curve) with axis ticks, labels along the curve
    and legend lines (set sideways, turned 90 degrees, or upright) and an upright caption below it:
    the layout model boxes the chart as one picture and few or none of its labels as text."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    x0, y0, x1, y1 = 90, 80, 520, 700
    shape = page.new_shape()
    shape.draw_rect(pymupdf.Rect(x0, y0, x1, y1))
    shape.finish(color=(0, 0, 0), width=0.8)
    points = [pymupdf.Point(x0 + 20 + 400 * (0.5 + 0.45 * math.sin(k / 6)), y0 + 10 + k * 10) for k in range(60)]
    shape.draw_polyline(points)
    shape.finish(color=(0.8, 0, 0), width=1.5)
    shape.commit()
    turn = 90 if sideways else 0
    for k in range(11):
        page.insert_text((x0 - 18, y0 + 8 + k * 60), f"{k * 10}", fontsize=7, rotate=turn)
    for k in range(8):
        page.insert_text((x0 + 10 + k * 55, y1 + 12), f"{k * 0.5:.1f}", fontsize=7, rotate=turn)
    for k, label in enumerate(CHART_LABELS):
        at = points[10 + k * 9]
        page.insert_text((at.x + 6, at.y), label, fontsize=7, rotate=turn)
    for k, label in enumerate(CHART_LEGEND):
        page.insert_text((x1 - 40, y0 + 30 + k * 80), label, fontsize=7, rotate=turn)
    page.insert_text((72, 740), CHART_CAPTION, fontsize=9)
    return save_pdf(doc, path)


def side_by_side_tables_pdf(path: Path, *, rules: bool, columns: tuple[int, int] = (4, 4), gutter: float = 50.0) -> Path:
    """A letter page: heading, paragraph, then two tables of 12 rows set side by side ``gutter``
    points apart (the left one with a column of drawn symbols), each with horizontal rules when
    ``rules``, then a paragraph. Without rules the layout model boxes both as one table."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 60), "Results by dose group", fontsize=14, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 75, 540, 130), "Patients received the adjusted dose once daily for twelve "
                        "weeks; the tables below list the serum levels and adverse events per group.", fontsize=10)
    heads = (["Group", "Sym", "Level", "Change", "Trough", "Peak"], ["Event", "Grade", "Count", "Share", "Onset", "Days"])
    colw, top, rows = 55.0, 150.0, 12
    x = 60.0
    for t in range(2):
        n = columns[t]
        shape = page.new_shape()
        for r in range(rows + 1):
            y = top + r * 18
            if rules:
                shape.draw_line((x, y - 12), (x + n * colw, y - 12))
            for c in range(n):
                at = (x + 3 + c * colw, y)
                if r == 0:
                    page.insert_text(at, heads[t][c], fontsize=9, fontname="hebo")
                elif t == 0 and c == 1:  # a symbol, drawn
                    cx, cy = at[0] + 6, y - 4
                    shape.draw_circle((cx, cy), 3.5) if r % 2 else shape.draw_rect(pymupdf.Rect(cx - 3.5, cy - 3.5, cx + 3.5, cy + 3.5))
                    shape.finish(color=(0, 0, 0), fill=(0.2, 0.2, 0.2))
                elif t == 0:
                    page.insert_text(at, f"G{r}" if c == 0 else f"{(r * 7 + c * 3) % 50 + 0.5:.1f}", fontsize=9)
                else:
                    page.insert_text(at, ["nausea", "rash", "fatigue", "headache"][r % 4] if c == 0 else f"{(r * 5 + c) % 9}", fontsize=9)
        if rules:
            shape.draw_line((x, top + rows * 18 + 6), (x + n * colw, top + rows * 18 + 6))
        shape.finish(color=(0, 0, 0), width=0.6)
        shape.commit()
        x += n * colw + gutter
    page.insert_textbox(pymupdf.Rect(72, 400, 540, 700), "The serum levels rose in every dose group and fell back "
                        "after the last dose; adverse events were mild. " * 8, fontsize=10)
    return save_pdf(doc, path)
