"""Line-break hyphens decided from evidence: is ``left-⏎right`` a broken word or a compound?

A hyphen at the end of a line either breaks a word ("infor-⏎mation" -> "information") or
belongs to a hyphenated compound that happens to break there ("angiotensin-⏎converting",
"well-⏎known"). The decision (:func:`decide`) weighs, in this order:

1. **The document's own spelling** (:class:`Lexicon`): how often the joined form ("mrbayes",
   case-insensitive) and the hyphenated form ("well-known", also inside longer compounds) occur
   elsewhere in the same document, never counting the line-break occurrences themselves. The
   more frequent spelling wins.
2. **Form**: a digit on either side of the hyphen ("33RE-⏎binding", "SARS-CoV-⏎2"), an
   uppercase letter starting the second part ("non-⏎Hodgkin", "Ac-⏎SDKP") or an acronym / mixed
   case first part ("FAA-⏎approved") keep the hyphen.
3. **Word frequencies** (``wordfreq``, Zipf scale, English): the joined form is taken when it is
   a known word at least about as frequent as the rarer of the two parts; the hyphen is kept
   when both parts are known words and the joined form is clearly rarer ("wellknown" 1.6 vs
   "well"/"known" >= 5.4), or unknown altogether ("underresourced" 0). A part that is no word
   (an unknown fragment like "ketomethyl"/"ene", "thrombopro"/"phylaxis") means a broken word.
   Common prefixes (anti-, co-, non-, pre-, re-, self-, ...) are frequent on their own, so for
   them the second part alone stands for the compound.

Without ``wordfreq`` installed the frequency step falls back to the old form rule: a plain
lowercase word continued in lowercase is a broken word.

:func:`resolve_document` applies the decisions to parsed elements once per document: builders
keep every line-break hyphen in ``content`` and list it in a side table of their own (never in the
element's ``metadata``: scratch state lives in builder objects, not in the tree); the pass
removes the hyphens judged to break a word and shifts the line spans' character ranges and
``char_x`` accordingly (a dropped hyphen's line loses its last character and extent).
"""

from __future__ import annotations

import bisect
import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..model.elements import ParsingResult

log = logging.getLogger(__name__)

__all__ = ["DROP", "KEEP", "LineHyphens", "Lexicon", "decide", "split_parts", "resolve_document", "zipf"]

DROP, KEEP = "drop", "keep"
#: ``(position, token before, token after)`` of each line-break hyphen an element keeps in its
#: ``content`` pending :func:`resolve_document` (``BuiltText.hyphens``)
LineHyphens = Sequence[tuple[int, str, str]]

_HYPHEN_CHARS = "-\u2010"
_SPLIT = re.compile(f"[{_HYPHEN_CHARS}]")
# a word with internal hyphens/apostrophes, letters and digits at both ends
_TOKEN = re.compile(r"[^\W_](?:[\w'\u2019\-\u2010]*[^\W_])?")
_LEFT = re.compile(r"[\w'\u2019\-\u2010]*[^\W_]$")
_RIGHT = re.compile(r"^[^\W_][\w'\u2019\-\u2010]*")

#: Prefixes that are words on their own (frequent as separate tokens): their frequency says
#: nothing about the compound, so the second part alone is compared with the joined form.
PREFIXES = frozenset(
    {
        "anti", "co", "counter", "cross", "de", "inter", "intra", "multi", "non", "over", "post", "pre",
        "pro", "re", "self", "semi", "sub", "super", "trans", "un", "under", "well",
    }
)
#: Other forms of a word ("co-ordinated" for "co-⏎ordinating") share the first part and this
#: many letters of the second.
STEM_CHARS = 4
#: A joined form at least this frequent (Zipf; 3 = once per million words) is a word.
JOINED_WORD_ZIPF = 3.0
#: Zipf frequency below which a part does not count as a known word.
MIN_PART_ZIPF = 1.0
#: The joined form must be this much rarer (Zipf) than the rarer part to keep the hyphen.
KEEP_MARGIN = 1.0


@lru_cache(maxsize=1)
def _zipf_function():
    try:
        from wordfreq import zipf_frequency
    except ImportError:  # pragma: no cover - wordfreq is a core dependency
        log.warning("wordfreq is not installed: line-break hyphens fall back to a form rule")
        return None
    return zipf_frequency


@lru_cache(maxsize=65536)
def zipf(word: str) -> float:
    """English word frequency of ``word`` on wordfreq's Zipf scale (0 without wordfreq); cached."""
    fn = _zipf_function()
    if fn is None:  # pragma: no cover
        return 0.0
    return float(fn(word, "en"))


def split_parts(left: str, right: str) -> tuple[str, str]:
    """The word material either side of a line-break hyphen: ``left`` is the text before it (its
    last run of word characters and hyphens, leading punctuation dropped), ``right`` the next
    line's first word (trailing punctuation dropped)."""
    m = _LEFT.search(left.rstrip(_HYPHEN_CHARS + "\u00ad"))
    n = _RIGHT.search(right)
    left_word = m.group(0) if m else ""
    right_word = n.group(0) if n else ""
    return left_word.strip("'\u2019"), right_word.rstrip("'\u2019" + _HYPHEN_CHARS)


class Lexicon:
    """Word counts of one document, case-insensitive: each token (letters/digits with internal
    hyphens) counts itself and, when hyphenated, every run of consecutive parts ("a-b-c" counts
    "a-b-c", "a-b", "b-c"; the parts themselves as words)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._sorted: list[str] | None = None

    def add(self, text: str, skip: Sequence[int] = ()) -> None:
        """Count the tokens of ``text``, except those covering a position in ``skip``."""
        skips = sorted(skip)
        self._sorted = None
        for m in _TOKEN.finditer(text):
            if skips and any(m.start() <= p < m.end() for p in skips):
                continue
            token = m.group(0).lower().replace("\u2010", "-").replace("\u2019", "'")
            parts = [p for p in token.split("-") if p]
            if len(parts) <= 1:
                self.counts[token] += 1
                continue
            for i in range(len(parts)):
                self.counts[parts[i]] += 1
                for j in range(i + 2, min(len(parts), i + 6) + 1):
                    self.counts["-".join(parts[i:j])] += 1

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> Lexicon:
        lex = cls()
        for t in texts:
            lex.add(t)
        return lex

    def __getitem__(self, word: str) -> int:
        return self.counts.get(word.lower(), 0)

    def starting_with(self, prefix: str) -> int:
        """Occurrences of all words starting with ``prefix`` (case-insensitive)."""
        if self._sorted is None:
            self._sorted = sorted(self.counts)
        prefix = prefix.lower()
        i = bisect.bisect_left(self._sorted, prefix)
        total = 0
        while i < len(self._sorted) and self._sorted[i].startswith(prefix):
            total += self.counts[self._sorted[i]]
            i += 1
        return total


def decide(left: str, right: str, lexicon: Lexicon | None = None) -> str:
    """``KEEP`` or ``DROP`` for the hyphen ending a line whose last word is ``left`` (without the
    hyphen; it may contain earlier hyphens: "N-domain") when the next line starts with ``right``
    (see the module docstring)."""
    left, right = split_parts(left, right)
    if not left or not right:
        return KEEP
    a = _SPLIT.split(left)[-1]  # the part right before the hyphen ("domain" of "N-domain")
    b = _SPLIT.split(right)[0]  # the part right after it
    if not a or not b:
        return KEEP
    # 1. the document's own spelling
    if lexicon is not None:
        joined, hyphenated = lexicon[a + b], lexicon[a + "-" + b]
        if not joined and not hyphenated and len(b) > STEM_CHARS:  # other forms of the word
            stem = b[:STEM_CHARS]
            joined, hyphenated = lexicon.starting_with(a + stem), lexicon.starting_with(a + "-" + stem)
        if joined != hyphenated:
            return DROP if joined > hyphenated else KEEP
    # 2. form
    if any(c.isdigit() for c in a + b) or not (a.isalpha() and b.isalpha()):
        return KEEP
    if b[0].isupper():
        return KEEP
    if len(a) > 1 and any(c.isupper() for c in a[1:]):
        return KEEP  # acronym or mixed case: "FAA-", "RXP-", "McGill-"
    # 3. word frequencies
    if _zipf_function() is None:  # pragma: no cover
        return DROP if a[-1].islower() and b[0].islower() and left == a else KEEP
    al, bl = a.lower(), b.lower()
    zj = zipf(al + bl)
    za = zipf(al)
    zb = zipf(bl)
    if al in PREFIXES:
        za = max(za, zb)  # a frequent prefix is no evidence either way: judge by the base word
    if zj >= JOINED_WORD_ZIPF:
        return DROP  # a common word ("downstream", "understated")
    if min(za, zb) < MIN_PART_ZIPF:
        return DROP  # a fragment that is no word: a broken word
    return KEEP if min(za, zb) - zj >= KEEP_MARGIN else DROP


def resolve_document(
    nodes: Iterable[ParsingResult], hyphens: Mapping[int, LineHyphens]
) -> list[ParsingResult]:
    """Decide every pending line-break hyphen of ``nodes`` and their descendants (``hyphens``:
    ``id(node)`` -> its :data:`LineHyphens`; the caller keeps those nodes alive), with the whole
    document's text as evidence; remove the hyphens that break a word from ``content`` (shifting
    line spans' ``char_start``/``char_end``/``char_x``). Returns the nodes whose content changed."""
    flat = [d for n in nodes for d in n.walk()]
    lexicon = Lexicon()
    pending: list[tuple[ParsingResult, list[tuple[int, str, str]]]] = []
    for node in flat:
        raw = hyphens.get(id(node))
        cands = [(int(p), str(a), str(b)) for p, a, b in raw] if raw else []
        if node.content:
            lexicon.add(node.content, [p for p, _, _ in cands])
        if cands:
            pending.append((node, cands))
    changed: list[ParsingResult] = []
    for node, cands in pending:
        drops = sorted((p for p, a, b in cands if decide(a, b, lexicon) == DROP), reverse=True)
        drops = [p for p in drops if 0 <= p < len(node.content) and node.content[p] in _HYPHEN_CHARS]
        if not drops:
            continue
        for p in drops:
            _remove_char(node, p)
        changed.append(node)
    return changed


def _remove_char(node: ParsingResult, pos: int) -> None:
    """Delete ``content[pos]`` (the last char of its line) and shift the line spans after it."""
    node.content = node.content[:pos] + node.content[pos + 1 :]
    for box in node.geom:
        for span in box.spans:
            if span.char_start is None or span.char_end is None:
                continue
            if span.char_start > pos:
                span.char_start -= 1
                span.char_end -= 1
            elif span.char_end > pos:
                span.char_end -= 1
                if span.char_x is not None:
                    k = 2 * (pos - span.char_start)
                    span.char_x = span.char_x[:k] + span.char_x[k + 2 :]
