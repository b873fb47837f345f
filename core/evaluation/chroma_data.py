"""Chroma's general chunking-evaluation data set: corpora + questions with character references.

Layout (``../shared/data/chroma``): ``corpora/<corpus_id>.md`` and ``questions_df.csv`` with
columns ``question``, ``references`` (JSON list of ``{"content", "start_index", "end_index"}``,
Python ``str`` offsets, end exclusive) and ``corpus_id``. Every reference is checked against its
corpus on load; a mismatch is a :class:`~grounded.errors.SchemaError` naming the file and row.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, InputNotFoundError, SchemaError
from .spans import Span

__all__ = ["Question", "ChromaDataset", "load_chroma_dataset"]


@dataclass(frozen=True)
class Question:
    text: str
    corpus_id: str
    references: tuple[Span, ...]


@dataclass
class ChromaDataset:
    corpora: dict[str, str]
    questions: list[Question]
    root: Path | None = None
    corpus_paths: dict[str, Path] = field(default_factory=dict)

    def subset(self, corpus_ids: list[str] | None = None, limit: int | None = None) -> ChromaDataset:
        """Questions of ``corpus_ids`` only (all corpora kept for retrieval when None), first ``limit``."""
        qs = [q for q in self.questions if corpus_ids is None or q.corpus_id in corpus_ids]
        corpora = self.corpora if corpus_ids is None else {k: v for k, v in self.corpora.items() if k in corpus_ids}
        return ChromaDataset(corpora=corpora, questions=qs[:limit] if limit else qs, root=self.root,
                             corpus_paths={k: v for k, v in self.corpus_paths.items() if k in corpora})


def _read_text(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as fh:  # offsets are into the file's exact text
            return fh.read()
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text ({exc.reason})") from exc


def load_chroma_dataset(root: str | Path) -> ChromaDataset:
    """Load and verify ``questions_df.csv`` + the corpora it names under ``root``."""
    root = Path(root)
    csv_path = root / "questions_df.csv"
    if not csv_path.is_file():
        raise InputNotFoundError(csv_path, "Chroma questions file not found (expected <root>/questions_df.csv)")
    corpora: dict[str, str] = {}
    paths: dict[str, Path] = {}
    questions: list[Question] = []
    with open(csv_path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = {"question", "references", "corpus_id"} - set(reader.fieldnames or ())
        if missing:
            raise SchemaError(f"{csv_path}: missing columns {sorted(missing)}")
        for row_no, row in enumerate(reader, start=2):
            cid = row["corpus_id"]
            if cid not in corpora:
                path = root / "corpora" / f"{cid}.md"
                if not path.is_file():
                    raise InputNotFoundError(path, f"corpus '{cid}' named in {csv_path.name} line {row_no} not found")
                corpora[cid], paths[cid] = _read_text(path), path
            try:
                refs = json.loads(row["references"])
                spans = tuple((int(r["start_index"]), int(r["end_index"])) for r in refs)
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise SchemaError(f"{csv_path} line {row_no}: unreadable references ({exc})") from exc
            if not spans:
                raise SchemaError(f"{csv_path} line {row_no}: question without references")
            text = corpora[cid]
            for ref, (s, e) in zip(refs, spans):
                if not (0 <= s < e <= len(text)) or text[s:e] != ref.get("content"):
                    raise SchemaError(
                        f"{csv_path} line {row_no}: reference [{s}:{e}] does not match corpus '{cid}'"
                    )
            questions.append(Question(text=row["question"], corpus_id=cid, references=spans))
    if not questions:
        raise SchemaError(f"{csv_path}: no questions")
    return ChromaDataset(corpora=corpora, questions=questions, root=root, corpus_paths=paths)
