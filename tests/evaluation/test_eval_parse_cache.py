"""The evaluation's parse cache writes atomic .json/.md pairs and never trusts a damaged one."""

from __future__ import annotations

import logging

from grounded.evaluation.runs import parse_cached
from tests.support.data import shared


def test_cached_pair_is_reused_and_a_mixed_pair_is_parsed_again(tmp_path, caplog):
    pdf = sorted(shared("pdfs", "icdar2013_tables", "competition-dataset-us").glob("*.pdf"))[0]
    first = parse_cached(pdf, cache_dir=tmp_path)
    assert first.root is not None and first.error is None
    (json_path,) = list(tmp_path.rglob("*.json"))
    md_path = json_path.with_suffix(".md")
    assert parse_cached(pdf, cache_dir=tmp_path).root == first.root  # read back from the pair

    md_path.write_text("# a Markdown file from another parse\n", encoding="utf-8")  # a pair mixed by a crash
    with caplog.at_level(logging.WARNING, logger="grounded.evaluation.runs"):
        again = parse_cached(pdf, cache_dir=tmp_path)
    assert again.root is not None and again.root.children == first.root.children  # parsed afresh
    assert again.markdown == first.markdown
    assert "ignoring the cached parse" in caplog.text
    assert md_path.read_text(encoding="utf-8") == first.markdown  # the entry was rewritten
