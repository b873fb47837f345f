"""The source-key table (grounded.integrations.profiles) decides what the key lists of every surface
were written as by hand before it (issue 39): a row changed changes them all, on purpose."""

from __future__ import annotations

from grounded.integrations import profiles
from grounded.io.chunk_codec import PAYLOAD_KEYS
from grounded.io.pdf_info import PDF_METADATA_KEYS
from grounded.model.chunk_fields import embed_hidden_keys, llm_hidden_keys

TREE, TREE_REF, OPTIONS, PAGE = "grounded_tree", "grounded_tree_ref", "grounded_parser_options", "grounded_page"


def test_a_chunk_node_hides_and_drops_the_keys_it_did_before_the_table() -> None:
    assert profiles.NODE_HIDDEN == (TREE, TREE_REF, OPTIONS, PAGE, "source_sha256", "file_path", "total_pages", "parser", "page")
    assert profiles.NODE_EMBED_HIDDEN == ("page_label", "file_name")
    assert set(profiles.NODE_DROPPED) - {TREE} == {
        "source_sha256", "parser", "creator", "producer", "subject", "keywords", "creationdate", "moddate"}


def test_node_hidden_keys_keep_their_order() -> None:
    embed = profiles.node_hidden_keys(["x"], embed=True, heading_context="text")
    assert embed == [k for k in dict.fromkeys(["x", *embed_hidden_keys(), *profiles.NODE_HIDDEN, "page_label", "file_name",
                                               "pages", "section"]) if k != TREE]
    llm = profiles.node_hidden_keys([], embed=False, heading_context="none")
    assert llm == [k for k in dict.fromkeys([*llm_hidden_keys(), *profiles.NODE_HIDDEN, "section"]) if k != TREE]
    assert "section" not in profiles.node_hidden_keys([], embed=True, heading_context="metadata")


def test_the_reader_hides_its_keys_but_the_citable_ones_from_the_llm() -> None:
    assert set(profiles.DOCUMENT_KEYS) == {
        "file_name", "file_path", "source_sha256", "total_pages", "page_label", "parser", TREE_REF, OPTIONS, PAGE, TREE}
    assert set(profiles.LLM_VISIBLE_KEYS) == {"file_name", "page_label", "title"}
    meta = {"file_name": "a.pdf", "title": "T", "author": "A", "page_label": "2", "mine": 1, TREE_REF: "r"}
    assert profiles.reader_hidden_keys(meta) == (["file_name", "title", "author", "page_label", TREE_REF], ["author", TREE_REF])


def test_a_wrapped_splitters_node_hides_the_payload_and_the_machine_keys() -> None:
    assert list(dict.fromkeys(profiles.GROUNDING_HIDDEN)) == list(dict.fromkeys(
        (*PAYLOAD_KEYS, TREE_REF, OPTIONS, PAGE, "source_sha256", "file_path", "total_pages", "parser")))


def test_langchain_keeps_pymupdfloaders_key_order() -> None:
    assert (
        "source", "file_path", "file_name", "source_sha256", "parser", "total_pages", *PDF_METADATA_KEYS, TREE_REF, OPTIONS) == profiles.LANGCHAIN_SOURCE_KEYS
    assert profiles.page_keys([3, 2]) == {"page": 1, "pages": [2, 3], "page_start": 2, "page_end": 3}
    assert profiles.page_keys([])["page"] == 0


def test_what_a_part_does_not_inherit_starts_from_the_field_tables_resplit_column() -> None:
    from grounded.model.chunk_fields import resplit_keys

    column = {*resplit_keys("recompute"), *resplit_keys("drop")}
    assert column == profiles.RESPLIT_NOT_INHERITED
    own = {"grounded_kind", "page", "char_spans", "element_id", "element_type", "grounded_element"}
    assert {*column, "strategy", "strategy_params", "heading_ids", *own, "start_index"} == profiles.LANGCHAIN_PART_KEYS
    assert {*column, "strategy", "section", "heading_path", "heading_ids", *own, TREE} == profiles.LANGCHAIN_GROUNDED_PART_KEYS
