"""The focus of a hit: the sentences, table rows or list items of a retrieved chunk that answer the
query, as offsets into the chunk text, with exact boxes.

* :mod:`.units` cuts a chunk text into candidate units;
* :mod:`.lexical` scores the query's words in them; :mod:`.select` adds MiniLM similarity and
  chooses by the scores (a gap), never a fixed count;
* :mod:`.boxes` places the chosen spans with the chunk box assembly;
* :mod:`.api`: :func:`focus_of` for any chunk, node, Document, row or hit.
"""

from __future__ import annotations

from .api import Focus, FocusWarning, focus_embedder, focus_of, focus_texts
from .select import Choice, FocusSettings

__all__ = ["Focus", "FocusWarning", "FocusSettings", "Choice", "focus_of", "focus_texts", "focus_embedder"]
