"""``llamaparse`` backend: the partial real JSON result (items, heading levels, tables, a null
box), and a real parse of a shared PDF re-encoded as a LlamaParse JSON result served by a fake
client -> the same elements and boxes back -> PDF box cross-check -> chunks. No network.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from grounded.errors import MissingCredentialsError, RemoteServiceError
from grounded.parsers import get_parser
from grounded.parsers.backends.llamaparse import LlamaParseParser, llamaparse_box, pages_to_tree, result_pages
from grounded.runtime.cloud import RetryPolicy
from tests.support.backends.llamaparse import (
    NO_WAIT,
    FakeLlamaParse,
    T,
    _http_error,
    excerpt_result,
    llamaparse_result,
)
from tests.support.cloud_fixtures import (
    RAW,
    RefElement,
    assert_same_as_reference,
    blank_pdf,
    box_text_distances,
    check_chunks,
    leaf_elements,
    norm,
    reference_elements,
)


@pytest.fixture(scope="module")
def clinsci_refs(clinsci_pdf: Path) -> list[RefElement]:
    return reference_elements(clinsci_pdf, [1, 2])


# -- recorded partial output -------------------------------------------------------------------
def test_recorded_items_keep_types_levels_and_tables():
    root = pages_to_tree(result_pages(excerpt_result()))
    assert [c.type for c in root.children] == [
        T.PARAGRAPH, T.SECTION_HEADER, T.PARAGRAPH, T.SECTION_HEADER, T.PARAGRAPH, T.SECTION_HEADER, T.TABLE, T.TABLE,
    ]
    assert [c.metadata.get("native_level") for c in root.children if c.type == T.SECTION_HEADER] == [1, 2, 3]
    assert root.children[1].content == "PROPOSED BUDGET"
    staff = root.children[6]
    assert [[c.content for c in r.children] for r in staff.children[:2]] == [
        ["Position", "Name"], ["Director of Mayor's Office of Public Policy and Finance", "Anna Duning"]]
    assert len(staff.children) == 11 and staff.children[0].metadata["header"] is True
    # the excerpt has no page sizes: boxes cannot be normalized and are dropped, elements are kept
    assert all(not n.geom for n in root.walk())


def test_recorded_boxes_normalize_and_null_boxes_are_dropped():
    root = pages_to_tree(result_pages(excerpt_result(612.0, 792.0)))  # US Letter, the budget PDF's size
    first = root.children[0].geom[0]
    assert (first.page, first.left, first.top) == (1, pytest.approx(176 / 612), pytest.approx(64 / 792))
    assert first.right == pytest.approx((176 + 276.2) / 612) and first.bottom == pytest.approx(76 / 792)
    age_table = root.children[-1]
    assert age_table.type == T.TABLE and age_table.geom == []  # bBox x/w were null
    assert [c.content for c in age_table.children[1].children] == ["Under 5 Years", "~50,000"]
    assert root.metadata["pages"] == [{"page": 1, "width": 612.0, "height": 792.0}, {"page": 35, "width": 612.0, "height": 792.0}]


def test_box_edge_cases():
    assert llamaparse_box({"x": 0, "y": 0, "w": 600, "h": 780}, 1, 612, 792) is None  # full page: not localised
    assert llamaparse_box({"x": 10, "y": 10, "w": 0, "h": 5}, 1, 612, 792) is None
    assert llamaparse_box(None, 1, 612, 792) is None
    clipped = llamaparse_box({"x": 600, "y": 780, "w": 30, "h": 30}, 1, 612, 792)
    assert clipped.right == 1.0 and clipped.bottom == 1.0
    # newer results: a list of boxes per item
    root = pages_to_tree([{"page": 1, "width": 100, "height": 100, "items": [
        {"type": "text", "value": "two parts", "bbox": [{"x": 10, "y": 10, "w": 20, "h": 5}, {"x": 10, "y": 20, "w": 20, "h": 5}]},
        {"type": "list", "items": [{"type": "text", "value": "a"}, {"type": "text", "value": "b"}]},
        {"type": "sticker", "value": "?"},
    ]}])
    text, lst, odd = root.children
    assert len(text.geom) == 2
    assert lst.type == T.LIST and [(c.type, c.content) for c in lst.children] == [(T.LIST_ITEM, "a"), (T.LIST_ITEM, "b")]
    assert odd.type == T.MISSING and odd.metadata["native_label"] == "sticker"


def test_markdown_is_the_services_page_markdown(tmp_path: Path):
    """LlamaParse writes Markdown itself (each page's ``md``): it is kept, not re-rendered."""
    parser = LlamaParseParser(client=FakeLlamaParse({}))
    pdf = blank_pdf(tmp_path / "budget.pdf", [(612.0, 792.0)] * 35)  # the budget PDF is not shared
    result = excerpt_result(612.0, 792.0)
    md = parser.parse_native(result, pdf).markdown
    assert md.startswith("CITY & COUNTY OF SAN FRANCISCO, CALIFORNIA\n\n# PROPOSED BUDGET")
    result["pages"][0]["md"] = "# Page one"
    assert parser.parse_native(result, pdf).markdown.startswith("# Page one\n\n| Age Group")


# -- credentials, errors, retries --------------------------------------------------------------
def test_missing_api_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("LLAMA_CLOUD_API_KEY", raising=False)
    with pytest.raises(MissingCredentialsError) as err:
        get_parser("llamaparse")
    assert "LLAMA_CLOUD_API_KEY" in str(err.value) and "\n" not in str(err.value)


def test_api_key_from_the_environment_builds_a_real_client(monkeypatch):
    monkeypatch.setenv("LLAMA_CLOUD_API_KEY", "llx-test-not-used")
    parser = get_parser("llamaparse", timeout=60, options={"premium_mode": True})
    assert type(parser.client).__name__ == "LlamaParse"
    assert parser.client.ignore_errors is False and parser.client.max_timeout == 60 and parser.client.premium_mode




def test_rate_limit_is_retried_then_succeeds(clinsci_pdf: Path, clinsci_refs):
    waits: list[float] = []
    client = FakeLlamaParse(llamaparse_result(clinsci_refs), [_http_error(429), _http_error(502)])
    parser = LlamaParseParser(client=client, sleep=waits.append, retry=RetryPolicy(initial_delay=2.0, jitter=0.0))
    out = parser.run(clinsci_pdf)
    assert client.calls == [str(clinsci_pdf)] * 3 and waits == [2.0, 4.0]
    assert out.root.metadata["parser"] == "llamaparse"


def test_failures_become_remote_service_errors(clinsci_pdf: Path):
    client = FakeLlamaParse({}, [_http_error(500)] * 3)
    with pytest.raises(RemoteServiceError, match=r"after 3 attempts: HTTP 500"):
        LlamaParseParser(client=client, retry=NO_WAIT).run(clinsci_pdf)
    with pytest.raises(RemoteServiceError, match="HTTP 401"):
        LlamaParseParser(client=FakeLlamaParse({}, [_http_error(401)]), retry=NO_WAIT).run(clinsci_pdf)
    with pytest.raises(RemoteServiceError, match="Job failed"):
        LlamaParseParser(client=FakeLlamaParse({"error": "Job failed", "pages": []})).run(clinsci_pdf)


def test_missing_page_sizes_are_taken_from_the_pdf(clinsci_pdf: Path, clinsci_refs):
    result = llamaparse_result(clinsci_refs)
    for page in result["pages"]:
        del page["width"], page["height"]
    native = LlamaParseParser(client=FakeLlamaParse(result)).record_native(clinsci_pdf)
    assert native["pages"][0]["width"] == pytest.approx(595.276) and native["pages"][0]["height"] == pytest.approx(788.031)


# -- re-encoded real parse ---------------------------------------------------------------------
def test_reencoded_result_gives_the_same_elements_and_boxes(clinsci_pdf: Path, clinsci_refs):
    parser = LlamaParseParser(client=FakeLlamaParse(llamaparse_result(clinsci_refs)), **RAW)
    root = parser.run(clinsci_pdf).root
    assert_same_as_reference(root, clinsci_refs, tolerance=1e-6)
    assert root.metadata["job_id"] == "local-fixture"


def test_unlocalised_items_are_kept_without_boxes(clinsci_pdf: Path, clinsci_refs):
    parser = LlamaParseParser(client=FakeLlamaParse(llamaparse_result(clinsci_refs, extras=True)), **RAW)
    native = parser.record_native(clinsci_pdf)
    root = parser.parse_native(native, clinsci_pdf).root
    *_, null_box, full_page = leaf_elements(root)
    assert (null_box.content, null_box.geom) == ("unlocalised note", [])
    assert (full_page.content, full_page.geom) == ("whole page", [])


def test_text_inside_each_box_matches_the_element(clinsci_pdf: Path, clinsci_refs):
    parser = LlamaParseParser(client=FakeLlamaParse(llamaparse_result(clinsci_refs)), **RAW)
    distances = box_text_distances(parser.run(clinsci_pdf).root, clinsci_pdf)
    assert len(distances) >= 20
    assert statistics.mean(d for _, d in distances) < 0.03
    assert sum(d < 0.1 for _, d in distances) / len(distances) >= 0.9


def test_reencoded_result_to_chunks_with_boxes(clinsci_pdf: Path, clinsci_refs):
    out = LlamaParseParser(client=FakeLlamaParse(llamaparse_result(clinsci_refs, extras=True))).run(clinsci_pdf)
    root = out.root
    texts = [n for n in root.walk() if n.type == T.PARAGRAPH and n.geom]
    assert sum(bool(b.spans) for n in texts for b in n.geom) / len(texts) > 0.9
    chunks = check_chunks(root, clinsci_pdf)
    assert {p for c in chunks for p in c.metadata["pages"]} == {1, 2}
    assert norm(texts[3].content)[:60] in norm(" ".join(c.body for c in chunks))
    assert out.markdown.startswith(norm(clinsci_refs[0].text)[:20])
