"""Typed records over a parse-tree node's metadata (grounded.model.element_info): they read and
write the same keys the tree JSON has always had, in place, so the JSON, pickles and copies are
unchanged; and the layers below the adapters read these keys only through them."""

from __future__ import annotations

import copy
import json
import pickle
import re
from pathlib import Path

from grounded.model import ParsingResult, ParsingResultType
from grounded.model.element_info import META_KEYS, PageSize
from grounded.serialization import dumps_parsing_result, loads_parsing_result

T = ParsingResultType
REPO = Path(__file__).resolve().parents[2]


def _tree() -> ParsingResult:
    page = {"page": 1, "width": 600, "height": 800, "text_source": "ocr"}
    root = ParsingResult("root", T.ROOT, metadata={"parser": "x", "pages": [page]})
    head = root.add_child(ParsingResult("e1", T.SECTION_HEADER, "1 Intro", metadata={"native_label": "title", "native_level": 2}))
    head.style.size, head.style.bold = 14.0, True
    head.heading.level, head.heading.source = 1, "numbering"
    return root


def test_records_write_the_metadata_keys_in_order():
    root = _tree()
    head = root.children[0]
    assert list(head.metadata) == ["native_label", "native_level", "font_size", "font_bold", "level", "level_source"]
    assert head.metadata["font_size"] == 14.0 and head.metadata["level_source"] == "numbering"
    assert (head.style.size, head.style.bold, head.heading.native_level, head.relabel.native_label) == (14.0, True, 2, "title")
    assert head.relabel.demoted_from is None and "demoted_from" not in head.metadata


def test_rewriting_a_key_keeps_its_place_and_del_removes_it():
    head = _tree().children[0]
    head.style.size = 16.0
    assert list(head.metadata)[2] == "font_size" and head.metadata["font_size"] == 16.0
    del head.style.size, head.heading.native_level
    del head.relabel.promoted_from  # absent: a no-op
    assert list(head.metadata) == ["native_label", "font_bold", "level", "level_source"]


def test_root_info_reads_page_sizes_and_source():
    root = _tree()
    assert list(root.info.page_sizes()) == [PageSize(1, 600.0, 800.0)]
    assert root.info.page_numbers() == [1] and root.info.parser == "x" and root.info.source is None
    assert root.children[0].page_size(1) == (600.0, 800.0)
    root.info.source = {"path": "a.pdf"}
    assert list(root.metadata) == ["parser", "pages", "source"]


def test_json_pickle_and_copies_see_only_the_metadata():
    root = _tree()
    text = dumps_parsing_result(root)
    assert '"font_size": 14.0, "font_bold": true, "level": 1, "level_source": "numbering"' in text
    for other in (loads_parsing_result(text), pickle.loads(pickle.dumps(root)), copy.deepcopy(root)):
        assert dumps_parsing_result(other) == text
        assert other.children[0].heading.level == 1
    assert json.loads(text)["root"]["children"][0]["metadata"]["level"] == 1


_STRING_KEYED = re.compile(r"""metadata(\.get\(|\[|\.setdefault\(|\.pop\()"([a-z_]+)\"""")


def test_few_string_keyed_metadata_accesses_are_left_below_the_adapters():
    """Issue 39 item 3: parsers, graph, model and text read typed records; what is left are a
    backend's open-ended extras and its native input's keys (at most 15), none of them a key a
    typed record owns."""
    found = [
        (f"{path.relative_to(REPO)}:{n}", match.group(2))
        for folder in ("parsers", "graph", "model", "text")
        for path in sorted((REPO / "core" / folder).rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for match in _STRING_KEYED.finditer(line)
    ]
    assert len(found) <= 15, found
    assert [(where, key) for where, key in found if key in META_KEYS] == []
