"""Strip active content from a PDF before it is handed out (the highlighted copy, by default).

A source PDF can carry JavaScript (document-level, in an open action, in a link, a form field or
an additional-actions trigger), launch actions that start programs, form submission/import
actions, XFA form scripts and embedded files. :func:`strip_active_content` removes, in place:

* every ``/AA`` (additional actions: page open/close, field and annotation triggers) entry;
* every ``/A``, ``/OpenAction`` and ``/Next`` action whose type is not a plain navigation
  (:data:`SAFE_ACTIONS`: ``GoTo``, ``URI``, ``Named``, ``Thread``) - JavaScript, Launch,
  SubmitForm, ImportData, GoToR/GoToE (other files), Rendition, ... are dropped; a link annotation
  left without a target is deleted;
* the catalog's ``/Names/JavaScript`` and ``/Names/EmbeddedFiles`` trees, ``/AcroForm/XFA``;
* file-attachment annotations and embedded files.

Page content, annotations other than those (the highlights included), internal links, web links
and text (invisible OCR text layers too) are kept - unlike MuPDF's ``Document.scrub()``, which also
removes hidden text, metadata and all links, and leaves inline JavaScript dictionaries and launch
actions in place. Action objects are emptied in place and embedded files blanked before they are
unlinked, so nothing active survives even when the document is written without garbage
collection.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["SAFE_ACTIONS", "strip_active_content"]

#: action types kept: navigation inside the document or to a web address
SAFE_ACTIONS = frozenset({"/GoTo", "/URI", "/Named", "/Thread"})
_ACTION_KEYS = ("A", "OpenAction", "Next")
_S = re.compile(r"/S\s*(/[A-Za-z0-9]+)")


def _action_type(doc: Any, kind: str, value: str) -> str | None:
    """The ``/S`` of an action given as an inline dictionary or a reference; None when the value
    is no action dictionary (an OpenAction destination array, null)."""
    if kind == "xref":
        ref = int(value.split()[0])
        s_kind, s_value = doc.xref_get_key(ref, "S")
        return s_value if s_kind == "name" else None
    if kind == "dict":
        m = _S.search(value)
        return m.group(1) if m else None
    return None


def strip_active_content(doc: Any) -> int:
    """Remove active content from the open PyMuPDF ``doc`` (see the module docstring); returns how
    many things were removed (0: nothing active was there)."""
    removed = 0
    catalog = doc.pdf_catalog()
    for name in doc.embfile_names():
        doc.embfile_del(name)
        removed += 1
    for path in ("Names/JavaScript", "Names/EmbeddedFiles", "AcroForm/XFA"):
        if doc.xref_get_key(catalog, path)[0] != "null":
            doc.xref_set_key(catalog, path, "null")
            removed += 1
    for page in doc:
        for annot in list(page.annots() or []):
            if annot.type[1] == "FileAttachment":
                page.delete_annot(annot)
                removed += 1
    for xref in range(1, doc.xref_length()):
        try:
            if not doc.xref_is_stream(xref) and not doc.xref_object(xref, compressed=True).startswith("<<"):
                continue
        except RuntimeError:  # a broken object: nothing of ours to clean there
            continue
        if doc.xref_is_stream(xref) and doc.xref_get_key(xref, "Type")[1] == "/EmbeddedFile":
            doc.update_stream(xref, b" ")  # the content goes even if the stream object outlives its name
            continue
        own = doc.xref_get_key(xref, "S")
        if own[0] == "name" and own[1] not in SAFE_ACTIONS and doc.xref_get_key(xref, "Type")[1] in ("null", "/Action"):
            doc.update_object(xref, "<<>>")  # an action object: emptied wherever it is referenced from
            removed += 1
            continue
        if doc.xref_get_key(xref, "AA")[0] != "null":
            doc.xref_set_key(xref, "AA", "null")
            removed += 1
        for key in _ACTION_KEYS:
            kind, value = doc.xref_get_key(xref, key)
            action = _action_type(doc, kind, value)
            if action is not None and action not in SAFE_ACTIONS:
                doc.xref_set_key(xref, key, "null")
                removed += 1
    for page in doc:  # a link whose only action was dropped leads nowhere: remove it
        for link in page.get_links():
            if link.get("kind") == 0 and link.get("xref"):  # LINK_NONE
                page.delete_link(link)
    return removed
