"""What ``grounded search`` / ``grounded view`` refuse, as typed errors naming the folder and the fix."""

from __future__ import annotations

from ..errors import GroundedError, InputError, InputNotFoundError

__all__ = [
    "SearchError",
    "IndexNotFoundError",
    "NotAnIndexError",
    "NoEmbeddingsError",
    "NoTextIndexError",
    "MixedConfigurationsError",
    "EmptyQueryError",
    "InvalidQueryError",
    "NoSearchableWordsError",
    "PageFilterError",
    "ChunkNotInIndexError",
    "SourceChangedError",
]


class SearchError(GroundedError):
    """Base of the errors of :mod:`grounded.search`."""


class IndexNotFoundError(SearchError, InputNotFoundError):
    """The ingest output folder ``OUT`` does not exist."""


class NotAnIndexError(SearchError, InputError):
    """``OUT`` exists but holds no searchable ingest output (no ``OUT/lancedb`` table ``chunks``, or a
    table without the columns ``grounded ingest`` writes)."""


class NoEmbeddingsError(SearchError, InputError):
    """Vector or hybrid search on an output ingested without ``--embed minilm`` (no vector column),
    or with vectors of another size than the MiniLM query embedding."""


class NoTextIndexError(SearchError, InputError):
    """Text or hybrid search on a table without a full-text (BM25) index."""


class MixedConfigurationsError(SearchError, InputError):
    """The table holds rows of several ingest configurations and none was chosen (``config=``)."""


class EmptyQueryError(SearchError, ValueError):
    """The question is empty or only whitespace."""


class PageFilterError(SearchError, ValueError):
    """A page filter that is not 1-based page numbers (``pages=``) or an inclusive ``(first, last)``
    range with ``1 <= first <= last`` (``page_range=``, ``grounded search --pages 3-5``), or both at once."""


class InvalidQueryError(SearchError, ValueError):
    """The question is not text: ``bytes``, or a string that is not valid Unicode (lone surrogates,
    such as the bytes of a command-line argument that is not valid UTF-8, ``$'\\xff patients'``).
    Refused in every mode before the index is read; the message names the first bad character."""


class NoSearchableWordsError(SearchError, ValueError):
    """Text search for a question without a word the full-text index can match: only stop words,
    operators or punctuation, or words of a script written without spaces (Chinese, Japanese,
    Thai...) that match no indexed word. The message suggests ``--mode vector`` (hybrid mode
    answers such a question from its vector list alone); ``reason`` is the cause alone, for a surface
    that names the modes its own way (the viewer's mode menu)."""

    def __init__(self, reason: str, hint: str = "use --mode vector (or hybrid), which searches by meaning") -> None:
        self.reason = reason
        super().__init__(f"{reason}; {hint}" if hint else reason)


class ChunkNotInIndexError(SearchError, InputError):
    """No row of the table has this chunk id."""


class SourceChangedError(SearchError, InputError):
    """The indexed PDF is missing or its bytes are not the ones the rows were made from (sha256)."""
