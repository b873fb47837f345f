"""Issue #9.7 (core side): encrypted PDFs with ``password=``, PDF bytes and file objects as input.

The encrypted files are built with PyMuPDF in ``tmp_path`` from a real page of a shared PDF
(AES-256, user + owner password). Parsing them must give exactly the text of the unencrypted
parse, record the original source, and leave no temporary file behind.
"""

from __future__ import annotations

import io
import os
import tempfile
import warnings
from pathlib import Path

import pytest

from grounded.errors import EncryptedPDFError, InputNotFoundError, NotAPDFError
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.pdf_input import inspect_pdf
from tests.support.data import shared

USER, OWNER = "s3cret user", "0wner pw"


def _text(root) -> str:
    return "\n".join(n.content for n in root.walk() if n.content)


@pytest.fixture(scope="module")
def plain_pdf(tmp_path_factory) -> Path:
    """Page 1 of a shared paper (real layout: title, authors, two columns)."""
    import pymupdf

    src = shared("pdfs", "cermine_medical", "test1.pdf")
    out = tmp_path_factory.mktemp("plain") / "paper.pdf"
    with pymupdf.open(src) as doc, pymupdf.open() as one:
        one.insert_pdf(doc, from_page=0, to_page=0)
        one.save(out)
    return out


def _encrypt(plain: Path, target: Path, *, user: str = USER, owner: str = OWNER) -> Path:
    import pymupdf

    with pymupdf.open(plain) as doc:
        doc.save(target, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=user, owner_pw=owner)
    return target


@pytest.fixture(scope="module")
def encrypted_pdf(plain_pdf, tmp_path_factory) -> Path:
    return _encrypt(plain_pdf, tmp_path_factory.mktemp("enc") / "locked.pdf")


@pytest.fixture(scope="module")
def parser():
    with PyMuPDFParser() as p:
        yield p


@pytest.fixture(scope="module")
def plain_text(parser, plain_pdf) -> str:
    return _text(parser.parse(plain_pdf))


@pytest.fixture()
def private_tmp(tmp_path, monkeypatch) -> Path:
    """Point the temp dir at an empty folder so leftovers are visible."""
    tmp = tmp_path / "systmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def test_encrypted_pdf_is_really_locked(encrypted_pdf):
    import pymupdf

    with pymupdf.open(encrypted_pdf) as doc:
        assert doc.needs_pass and doc.is_encrypted


def test_right_password_gives_the_unencrypted_text(parser, encrypted_pdf, plain_text, private_tmp):
    password = USER
    root = parser.parse(encrypted_pdf, password=password)
    assert _text(root) == plain_text and plain_text.strip()
    source = root.metadata["source"]
    assert source["path"] == str(encrypted_pdf) and source["name"] == "locked.pdf"
    assert source["encrypted"] is True
    assert source["sha256"] == inspect_pdf(encrypted_pdf, True, password=password).sha256
    import hashlib

    assert source["sha256"] == hashlib.sha256(encrypted_pdf.read_bytes()).hexdigest()
    # line boxes come from the text layer of the decrypted copy: present and on the page
    boxes = [b for n in root.walk() for b in n.geom if b.spans]
    assert boxes
    assert list(private_tmp.iterdir()) == [], "temporary copy left behind"


def test_wrong_password_names_the_file(parser, encrypted_pdf, private_tmp):
    with pytest.raises(EncryptedPDFError) as err:
        parser.parse(encrypted_pdf, password="not it")
    msg = str(err.value)
    assert str(encrypted_pdf) in msg and "password" in msg and "wrong" in msg
    assert list(private_tmp.iterdir()) == []


def test_no_password_says_how_to_give_one(parser, encrypted_pdf):
    with pytest.raises(EncryptedPDFError) as err:
        parser.parse(encrypted_pdf)
    msg = str(err.value)
    assert str(encrypted_pdf) in msg and "password is needed" in msg and "password=" in msg


def test_inspect_pdf_password(encrypted_pdf, plain_pdf):
    for password in (USER, OWNER):
        info = inspect_pdf(encrypted_pdf, require_text=True, password=password)
        assert info.encrypted and info.page_count == 1 and info.text_pages == [1]
    assert not inspect_pdf(plain_pdf, require_text=True).encrypted
    # a password given for an unencrypted file is simply not needed
    assert not inspect_pdf(plain_pdf, require_text=True, password="x").encrypted
    with pytest.raises(EncryptedPDFError):
        inspect_pdf(encrypted_pdf, require_text=True, password="")


def test_bytes_input(parser, plain_pdf, plain_text, private_tmp):
    data = plain_pdf.read_bytes()
    root = parser.parse(data, name="from-upload.pdf")
    assert _text(root) == plain_text
    source = root.metadata["source"]
    assert source["path"] == "from-upload.pdf" and source["name"] == "from-upload.pdf"
    assert source["from_bytes"] is True and "encrypted" not in source
    import hashlib

    assert source["sha256"] == hashlib.sha256(data).hexdigest()
    assert list(private_tmp.iterdir()) == []


def test_file_object_input_encrypted(parser, encrypted_pdf, plain_text, private_tmp):
    data = encrypted_pdf.read_bytes()
    root = parser.parse(io.BytesIO(data), password=USER, name="upload.pdf")
    assert _text(root) == plain_text
    assert root.metadata["source"]["encrypted"] is True
    assert root.metadata["source"]["path"] == "upload.pdf"
    # an open file object names itself
    with open(encrypted_pdf, "rb") as fh, pytest.raises(EncryptedPDFError) as err:
        parser.parse(fh, password="wrong")
    assert str(encrypted_pdf) in str(err.value) and "wrong" in str(err.value)
    assert "grounded-" not in str(err.value)  # never the temporary copy's path
    assert list(private_tmp.iterdir()) == []


def test_bad_bytes_are_typed_errors_naming_the_input(parser, private_tmp):
    with pytest.raises(NotAPDFError) as err:
        parser.parse(b"hello, not a pdf", name="notes.pdf")
    assert str(err.value).startswith("notes.pdf: ")
    with pytest.raises(NotAPDFError) as err:
        parser.parse(io.BytesIO(b""))
    assert str(err.value).startswith("<bytes>: ")
    with pytest.raises(TypeError):
        parser.parse(12345)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        parser.parse(io.StringIO("%PDF-1.7"))  # type: ignore[arg-type]
    with pytest.raises(InputNotFoundError):
        parser.parse(private_tmp / "missing.pdf")
    assert list(private_tmp.iterdir()) == []


def test_save_bytes_uses_the_name(parser, plain_pdf, tmp_path, private_tmp):
    out = tmp_path / "out"
    json_path, md_path = parser.save(bytearray(plain_pdf.read_bytes()), out, name="upload.pdf")
    assert json_path.name == "upload.json" and md_path.name == "upload.md"
    assert sorted(p.name for p in out.iterdir()) == ["upload.json", "upload.md"]
    assert list(private_tmp.iterdir()) == []


def test_temp_files_removed_when_the_backend_fails(encrypted_pdf, private_tmp):
    class Failing(PyMuPDFParser):
        def _transform(self, native):
            assert any(private_tmp.iterdir()), "the decrypted copy should exist during the parse"
            assert os.path.commonpath([native.path, private_tmp]) == str(private_tmp)
            raise RuntimeError("boom")

    from grounded.errors import ParserError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ParserError) as err:
            Failing().parse(encrypted_pdf.read_bytes(), password=USER, name="up.pdf")
    assert str(err.value).startswith("up.pdf: ") and "boom" in str(err.value)
    assert list(private_tmp.iterdir()) == []


def test_byte_inputs_use_a_temp_folder_the_next_run_cleans(parser, plain_pdf, plain_text, private_tmp):
    """Bytes are parsed from ``grounded-source-<pid>-*`` (io.atomic.make_temp_dir): a folder a
    killed run left (its pid gone) is removed by the next parse of bytes; the parse's own goes at its end."""
    import re
    import subprocess
    import sys

    from grounded.parsers.source import TEMP_PREFIX

    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True).stdout)
    left = private_tmp / f"{TEMP_PREFIX}{dead}-k1ll3d"
    (left / "decrypted").mkdir(parents=True)
    (left / "decrypted" / "secret.pdf").write_bytes(b"%PDF-1.7 decrypted copy of a killed run")
    used: list[Path] = []

    class Watching(PyMuPDFParser):
        def _transform(self, native):
            used.append(Path(native.path).parent)
            return super()._transform(native)

    root = Watching().parse(plain_pdf.read_bytes(), name="upload.pdf")
    assert _text(root) == plain_text
    assert used and used[0].parent == private_tmp
    assert re.fullmatch(rf"{TEMP_PREFIX}{os.getpid()}-\w+", used[0].name), used[0].name
    assert not left.exists()  # the killed run's folder (and its decrypted copy) is gone
    assert list(private_tmp.iterdir()) == []
