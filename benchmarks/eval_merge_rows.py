"""Add the rows of a new ``grounded eval chunking`` run to a published result, keeping its rows.

A full grid takes about an hour cold on the shared 2-core machine; adding one configuration (N=1024,
a new strategy) should not re-measure - and silently change - the published rows measured by an
earlier tree. This script runs ``grounded eval chunking`` with the given arguments into a temporary
folder, then merges the new results into ``docs/results/<name>.json`` (appended to ``results``) and
``<name>.md``: in every ``### `` section whose table the new run also printed, each new table row goes
after the last row with the same first cell (the strategy), or after the last row whose first cell is
``--after``, else at the end of the table. The existing lines are kept byte for byte; ``--note`` adds
a provenance paragraph under the title of the file. ``<name>.png`` is then plotted again from the merged
JSON (:func:`grounded.evaluation.report.plot_stored_chunking`: every row, grouped by strategy);
``--plot-only`` re-plots a stored result without merging or running anything.

    python benchmarks/eval_merge_rows.py --name chunking_grid --note "..." -- \\
        --suite grid --sizes 1024 --overlaps 0,0.2 --percentiles 0.7,0.9
    python benchmarks/eval_merge_rows.py --name chunking_extended --from-json /tmp/run.json --from-md /tmp/run.md
    python benchmarks/eval_merge_rows.py --name chunking_grid --plot-only

``--from-json/--from-md`` merge a run made earlier (e.g. in the background) instead of running one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _sections(md: str) -> list[tuple[str, list[str]]]:
    """(heading line, lines) of each ``### `` section (the text before the first one under ``""``)."""
    out: list[tuple[str, list[str]]] = [("", [])]
    for line in md.split("\n"):
        if line.startswith("### "):
            out.append((line, []))
        else:
            out[-1][1].append(line)
    return out


def _first_cell(row: str) -> str:
    return row.strip().strip("|").split("|")[0].strip()


def _table_rows(lines: list[str]) -> list[str]:
    """Data rows of the first Markdown table in ``lines`` (header and separator skipped)."""
    rows, seen_sep = [], False
    for line in lines:
        if line.startswith("|---") or line.startswith("| ---"):
            seen_sep = True
        elif seen_sep and line.startswith("|"):
            rows.append(line)
        elif seen_sep:
            break
    return rows


def merge_markdown(old: str, new: str, after: str | None = None, note: str | None = None) -> str:
    """``old`` with the table rows of ``new`` inserted section by section (module doc)."""
    new_rows = {head: _table_rows(lines) for head, lines in _sections(new) if head}
    out: list[str] = [note, ""] if note else []
    for head, lines in _sections(old):
        lines = list(lines)
        for row in new_rows.get(head, []) if head else []:
            idx = [i for i, line in enumerate(lines) if line.startswith("|")]
            data = idx[2:]  # header and separator first
            same = [i for i in data if _first_cell(lines[i]) == _first_cell(row)]
            anchor = [i for i in data if after is not None and _first_cell(lines[i]) == after]
            if not idx:
                continue
            lines.insert((same or anchor or data or idx)[-1] + 1, row)
        out += ([head] if head else []) + lines
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    run_args = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", required=True, help="result stem in --out (chunking_grid, chunking_extended)")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "results")
    ap.add_argument("--after", default=None, help="put rows of a new strategy after the rows of this one")
    ap.add_argument("--note", default=None, help="provenance paragraph added under the file's first line")
    ap.add_argument("--from-json", type=Path, default=None)
    ap.add_argument("--from-md", type=Path, default=None)
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--plot-only", action="store_true", help="only plot <name>.png again from <name>.json")
    args = ap.parse_args(own)
    old_md_path, old_json_path = args.out / f"{args.name}.md", args.out / f"{args.name}.json"
    from grounded.evaluation.report import plot_stored_chunking

    if args.plot_only:
        print(plot_stored_chunking(old_json_path))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        if args.from_json and args.from_md:
            new_json, new_md = args.from_json, args.from_md
        else:
            from grounded.cli import main as grounded_main

            data = args.data or (None if os.environ.get("GROUNDED_EVAL_DATA") else REPO.parent / "shared" / "data")
            cmd = ["eval", "chunking", *run_args, "--out", tmp, "--name", "new", *(["--data", str(data)] if data else [])]
            print(f"$ grounded {' '.join(cmd)}", file=sys.stderr, flush=True)
            code = grounded_main(cmd)
            if code:
                return code
            new_json, new_md = Path(tmp) / "new.json", Path(tmp) / "new.md"
        from grounded.serialization import atomic_write_text

        old = json.loads(old_json_path.read_text(encoding="utf-8"))
        add = json.loads(new_json.read_text(encoding="utf-8"))
        if old.get("n_values") != add.get("n_values"):
            print(f"n values differ: {old.get('n_values')} vs {add.get('n_values')}", file=sys.stderr)
            return 1
        old["results"] = [*old["results"], *add["results"]]
        md = merge_markdown(old_md_path.read_text(encoding="utf-8"), new_md.read_text(encoding="utf-8"),
                            after=args.after, note=args.note)
        atomic_write_text(old_json_path, json.dumps(old, indent=1, ensure_ascii=False) + "\n")
        atomic_write_text(old_md_path, md)
    print(plot_stored_chunking(old_json_path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
