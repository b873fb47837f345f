"""What text can be grounded at all: the length limit and valid Unicode, checked before any work."""

from __future__ import annotations

import re

__all__ = ["MAX_TEXT_CHARS", "lone_surrogate", "text_problem"]

#: default longest text grounded, in characters (``Grounder(max_chars=...)``): a longer text is
#: refused before any work, so memory stays linear in what is accepted (a chunk is typically
#: 200-10 000 characters; grounding costs roughly 500 bytes per query character)
MAX_TEXT_CHARS = 200_000
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> str | None:
    """Where ``text`` holds a lone surrogate (text that cannot be encoded as UTF-8), in words;
    None when it holds none."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return f"a lone surrogate (U+{ord(found.group()):04X} at character {found.start()}), not valid Unicode"


def text_problem(text: str, max_chars: int = MAX_TEXT_CHARS) -> str | None:
    """Why ``text`` cannot be grounded at all (too long, a lone surrogate), else None: checked
    before any work."""
    if len(text) > max_chars:
        return f"the text has {len(text)} characters, more than the grounding limit of {max_chars}"
    surrogate = lone_surrogate(text)
    return None if surrogate is None else f"the text holds {surrogate}"
