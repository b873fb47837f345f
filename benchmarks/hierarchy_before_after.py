"""Heading levels and list grouping before/after one change of the post-processing (issue #13.6).

``--dump FILE`` writes, per document, every heading (type, level, how the level was decided,
first words) and every list container (type, item count, first item's first words) of

* the default PyMuPDF backend's trees of the PDFs under ``../shared/data/long`` and
  ``../shared/data/pdfs/docling_groundtruth`` (the real tool runs), and
* the recorded backends of ``tests/parse/backends/test_backend_contract.py`` (recorded or re-encoded outputs
  replayed with ``parse_native``).

``--compare BEFORE AFTER`` prints, per document, the headings whose type or level changed and the
lists that changed, with totals. Run the dump once with the old code and once with the new one:

    python benchmarks/hierarchy_before_after.py --dump /tmp/before.json   # old checkout
    python benchmarks/hierarchy_before_after.py --dump /tmp/after.json
    python benchmarks/hierarchy_before_after.py --compare /tmp/before.json /tmp/after.json

Result when the one algorithm of :mod:`grounded.parsers.hierarchy` replaced the PyMuPDF tree
builder's and ``postprocess._header_level_map`` (#13.6): PyMuPDF on the 11 PDFs: 0 of 146 heading
levels and 0 of 36 lists changed; recorded backends (10 trees): 0 of 30 heading levels changed, one
heading became a paragraph (unstructured's "Corrosion rate (mm/year)", a 6.5 pt table column head
on an 8 pt page), 0 of 16 lists changed.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
_LISTS = ("LIST", "REFERENCE_LIST")
_HEADINGS = ("TITLE", "SECTION_HEADER")


def summary(root: Any) -> dict[str, list[list[Any]]]:
    """Headings ``[type, level, level_source, words]`` and lists ``[type, items, words]`` in reading order."""
    headings: list[list[Any]] = []
    lists: list[list[Any]] = []
    for node in root.walk():
        kind = node.type.value
        if kind in _HEADINGS:
            headings.append([kind, node.metadata.get("level"), node.metadata.get("level_source"), node.content[:50]])
        elif kind in _LISTS:
            first = node.children[0].content[:40] if node.children else ""
            lists.append([kind, len(node.children), first])
    return {"headings": headings, "lists": lists}


def dump(out: Path) -> None:
    from grounded import get_parser

    result: dict[str, Any] = {}
    parser = get_parser("pymupdf")
    pdfs = sorted((DATA / "long").glob("*.pdf")) + sorted((DATA / "pdfs" / "docling_groundtruth").glob("*.pdf"))
    for pdf in pdfs:
        result[f"pymupdf/{pdf.name}"] = summary(parser.parse(pdf))
        print(f"pymupdf/{pdf.name}", file=sys.stderr)
    sys.path.insert(0, str(REPO))
    from tests.conftest import shared
    from tests.parse.backends.test_backend_contract import cases

    for name, case in cases(shared("long", "cermine_web_example3_clinsci.pdf")).items():
        if case.native is None:
            continue
        result[f"{name}/{case.pdf.name}"] = summary(case.output().root)
        print(f"{name}/{case.pdf.name}", file=sys.stderr)
    # the other recorded Docling outputs with their PDFs
    from grounded.parsers.backends.docling import DoclingParser
    from grounded.parsers.backends.granite_docling import DocTagsPages, GraniteDoclingParser
    from tests.support.backends.docling import RecordedConverter
    from tests.support.backends.granite_docling import RecordedVlmConverter

    pdf = shared("native", "docling", "multi_page.pdf")
    docling = DoclingParser(converter=RecordedConverter())
    result[f"docling/{pdf.name}"] = summary(docling.parse_native(docling.load_native(pdf.with_suffix(".json")), pdf).root)
    granite = GraniteDoclingParser(converter=RecordedVlmConverter(DocTagsPages([])))
    native = granite.load_native(pdf.with_suffix(".doctags.txt"))
    result[f"granite_docling/{pdf.name}"] = summary(granite.parse_native(native, pdf).root)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")


def compare(before_path: Path, after_path: Path) -> None:
    before = json.loads(before_path.read_text(encoding="utf-8"))
    after = json.loads(after_path.read_text(encoding="utf-8"))
    totals = {"headings": 0, "level_changed": 0, "type_changed": 0, "lists": 0, "lists_changed": 0}
    for doc in sorted(set(before) | set(after)):
        b, a = before.get(doc), after.get(doc)
        if b is None or a is None:
            print(f"{doc}: only in {'after' if b is None else 'before'}")
            continue
        lines: list[str] = []
        bh = {h[3]: h for h in _keyed(b["headings"])}
        ah = {h[3]: h for h in _keyed(a["headings"])}
        totals["headings"] += len(bh)
        for key in [*bh, *(k for k in ah if k not in bh)]:
            old, new = bh.get(key), ah.get(key)
            if old is None or new is None or old[0] != new[0]:
                lines.append(f"  heading type: {old} -> {new}")
                totals["type_changed"] += 1
            elif old[1] != new[1]:
                totals["level_changed"] += 1
                lines.append(f"  level {old[1]} ({old[2]}) -> {new[1]} ({new[2]}): {old[3]!r}")
        totals["lists"] += len(b["lists"])
        if b["lists"] != a["lists"]:
            totals["lists_changed"] += abs(len(b["lists"]) - len(a["lists"])) or sum(
                x != y for x, y in zip(b["lists"], a["lists"])
            )
            lines.append(f"  lists: {len(b['lists'])} -> {len(a['lists'])}")
            for x in b["lists"]:
                if x not in a["lists"]:
                    lines.append(f"    - {x}")
            for x in a["lists"]:
                if x not in b["lists"]:
                    lines.append(f"    + {x}")
        print(f"{doc}: {len(b['headings'])} headings, {len(b['lists'])} lists" + (" (unchanged)" if not lines else ""))
        for line in lines:
            print(line)
    print("totals:", json.dumps(totals))


def _keyed(headings: list[list[Any]]) -> list[list[Any]]:
    """Headings keyed by text and occurrence (the same text may repeat)."""
    seen: dict[str, int] = {}
    out = []
    for h in headings:
        n = seen.get(h[3], 0)
        seen[h[3]] = n + 1
        out.append([*h[:3], f"{h[3]}#{n}" if n else h[3]])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", type=Path)
    ap.add_argument("--compare", type=Path, nargs=2)
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    warnings.simplefilter("ignore")
    if args.dump:
        dump(args.dump)
    if args.compare:
        compare(*args.compare)


if __name__ == "__main__":
    main()
