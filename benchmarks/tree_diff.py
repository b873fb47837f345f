"""Compare the parse trees two runs cached (``$GROUNDED_CACHE_DIR/parses/<parser>-<version>-<code>/``),
document by document, and say which elements changed and why (issue #34 fidelity items).

    python benchmarks/tree_diff.py BEFORE_DIR AFTER_DIR

Each document's elements (type, text, box rounded to 0.001) are compared; a document that differs is
listed with the changes attributed to a rule by the markers it leaves: ``picture_text`` (text inside a
picture box kept as the FIGURE's text instead of fallback paragraphs), ``split_at_gutter`` (a table box
split at a blank gutter), header/footer lines relabelled (one-page furniture), page ``status``
changes (glyphs without Unicode). Anything else is "other".
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    out = [node]
    for child in node.get("children") or []:
        out.extend(_nodes(child))
    return out


def _key(node: dict[str, Any]) -> tuple[Any, ...]:
    geom = node.get("geom") or []
    box = tuple(round(float(geom[0][k]), 3) for k in ("left", "top", "right", "bottom")) if geom else ()
    return node["type"], " ".join(str(node.get("content", "")).split()), box


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())["root"]


def compare(before: Path, after: Path) -> int:
    left = {p.name: p for p in before.rglob("*.json")}
    right = {p.name: p for p in after.rglob("*.json")}
    common = sorted(left.keys() & right.keys())
    totals: Counter[str] = Counter()
    differ = 0
    for name in common:
        a, b = _load(left[name]), _load(right[name])
        na, nb = [n for n in _nodes(a) if n["type"] != "ROOT"], [n for n in _nodes(b) if n["type"] != "ROOT"]
        ka, kb = Counter(map(_key, na)), Counter(map(_key, nb))
        status_a = [p.get("status") for p in a["metadata"].get("pages", [])]
        status_b = [p.get("status") for p in b["metadata"].get("pages", [])]
        if ka == kb and status_a == status_b:
            continue
        differ += 1
        gone, new = ka - kb, kb - ka
        why: Counter[str] = Counter()
        new_nodes = [n for n in nb if _key(n) in new]
        old_nodes = [n for n in na if _key(n) in gone]
        why["figure text kept in the picture (FIGURE picture_text)"] += sum(1 for n in new_nodes if n["metadata"].get("picture_text"))
        why["fallback paragraphs gone into a picture"] += sum(
            1 for n in old_nodes if n["metadata"].get("layout_fallback") and n["type"] == "PARAGRAPH")
        why["tables split at a gutter (new tables)"] += sum(1 for n in new_nodes if n["type"] == "TABLE" and n["metadata"].get("split_at_gutter"))
        why["tables replaced by the split (old tables)"] += sum(1 for n in old_nodes if n["type"] == "TABLE")
        why["one-page header/footer lines no longer kept as text"] += sum(
            1 for n in old_nodes if n["metadata"].get("relabeled_from") in ("PAGE_HEADER", "PAGE_FOOTER"))
        why["page status changed"] += sum(1 for x, y in zip(status_a, status_b, strict=False) if x != y)
        explained = {id(n) for n in new_nodes if n["metadata"].get("picture_text") or n["metadata"].get("split_at_gutter")}
        explained |= {id(n) for n in old_nodes if n["metadata"].get("layout_fallback") or n["type"] == "TABLE"
                      or n["metadata"].get("relabeled_from") in ("PAGE_HEADER", "PAGE_FOOTER")}
        text_figures = {_key(n)[2] for n in new_nodes if n["metadata"].get("picture_text")}
        explained |= {id(n) for n in old_nodes if n["type"] == "FIGURE" and _key(n)[2] in text_figures}  # its old, empty self
        # rows and cells of split tables, and the split tables' own children, count with their table
        in_tables = {id(d) for n in nb if n["metadata"].get("split_at_gutter") for d in _nodes(n)}
        in_tables |= {id(d) for n in old_nodes if n["type"] == "TABLE" for d in _nodes(n)}
        other = [n for n in new_nodes + old_nodes if id(n) not in explained and id(n) not in in_tables]
        why["other elements"] += len(other)
        print(f"{name.rsplit('-', 1)[0]}: " + ", ".join(f"{k}: {v}" for k, v in why.items() if v))
        for n in other[:3]:
            print(f"    other: {n['type']} {str(n.get('content', ''))[:70]!r}")
        totals.update(why)
    print(f"{len(common)} documents in both; {differ} differ")
    for k, v in totals.items():
        if v:
            print(f"  {k}: {v}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    args = ap.parse_args(argv)
    return compare(args.before, args.after)


if __name__ == "__main__":
    raise SystemExit(main())
