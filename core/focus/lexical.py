"""Lexical evidence that a unit answers a query: the query's words it holds, weighted by rarity,
and the kind of answer the question asks for (a number, a cause, a time).

Words are lower-cased letter/digit runs, reduced by a small English suffix stemmer (``patients`` ->
``patient``, ``treated``/``treatment`` -> ``treat``), stop words dropped. A word's weight is its
inverse document frequency over the candidate units of all the hits scored together (BM25's
``log(1 + (N - n + 0.5) / (n + 0.5))``): a query word found in every unit of the hits singles none
out, one found in a single sentence singles it out. No word-frequency table is loaded (``wordfreq``
costs 0.7 s per process; a query answers in about a second).
Negation words are never stop words: "did not improve" and "improved" are different answers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["words", "stem", "abbreviations", "QueryTerms", "query_terms", "lexical_scores", "NEGATIONS"]

_WORD = re.compile(r"[^\W_]+(?:[.,][0-9]+)*", re.UNICODE)
NEGATIONS = frozenset({"no", "not", "never", "none", "without", "nor", "neither", "cannot", "absent", "lack"})
_STOP = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "of", "off", "on", "once", "only", "or", "other", "our", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "patient's", "study", "studies", "paper", "article", "report", "reported", "according", "describe", "described", "show", "shows", "shown", "give", "given", "tell", "please", "find", "list", "name", "say", "said"]
) - NEGATIONS
_SUFFIXES = ("ational", "ization", "ations", "ation", "ments", "ment", "ness", "ings", "ing", "ies", "ied",
             "edly", "ed", "ly", "es", "s")
_NUMBER_WORDS = frozenset(["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "twenty", "thirty", "hundred", "thousand", "million", "billion", "half", "twice", "once", "fold", "percent"])
_ASKS_NUMBER = re.compile(r"\b(how (?:much|many|long|often|large|high|low|old|far)|what (?:dose|percentage|proportion|"
                          r"fraction|number|rate|ratio|amount|level|value|size|age|duration)|by how|number of|rate of)\b", re.I)
_ASKS_CAUSE = re.compile(r"\bwhy\b|\bwhat (?:causes|caused|explains)\b|\breason\b", re.I)
_ASKS_TIME = re.compile(r"\bwhen\b|\bwhat (?:year|date|month|day|time)\b|\bhow long\b", re.I)
_CAUSE = re.compile(r"\b(because|due to|owing to|as a result|since|therefore|thus|caused by|leads? to|so that)\b", re.I)
_TIME = re.compile(r"\b(1[89]\d\d|20\d\d|january|february|march|april|may|june|july|august|september|october|"
                   r"november|december|weeks?|months?|years?|days?|hours?)\b", re.I)
_NUMBER = re.compile(r"\d")


def stem(word: str) -> str:
    """A light English stem: the longest known suffix cut when at least 3 letters remain, then a
    final ``y`` or ``e`` (``injury``/``injured`` -> ``injur``, ``cause``/``causes`` -> ``caus``)."""
    if word.isdigit() or len(word) <= 3:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 4 and word[-1] in "ye" and not word[-2].isdigit():
        word = word[:-1]
    return word


#: a long form followed by its abbreviation in parentheses: "pulmonary embolism (PE)"
_DEFINITION = re.compile(r"((?:[^\W\d_][\w-]*\s+){1,8})\(([A-Z][A-Za-z0-9]{1,9}s?)\)")


def abbreviations(text: str) -> dict[str, tuple[str, ...]]:
    """The abbreviations ``text`` defines (``... pulmonary embolism (PE)``: ``{"pe": ("pulmonari",
    "embolism")}`` as stems): the long form is the words before the parentheses whose initials spell
    the abbreviation's capitals (case-insensitive, a plural ``s`` ignored)."""
    found: dict[str, tuple[str, ...]] = {}
    for m in _DEFINITION.finditer(text):
        short = m.group(2).rstrip("s") if m.group(2).endswith("s") and m.group(2)[:-1].isupper() else m.group(2)
        letters = [c.lower() for c in short if c.isupper() or c.isdigit()] or [short[0].lower()]
        before = re.split(r"[\s-]+", m.group(1).strip())
        if len(before) < len(letters):
            continue
        long_form = before[-len(letters):]
        if all(w[:1].lower() == c for w, c in zip(long_form, letters)):
            found[short.lower()] = tuple(stem(w.lower()) for w in long_form)
    return found


def words(text: str) -> list[str]:
    """The stems of ``text``'s words, stop words dropped, in order (repeats kept)."""
    return [stem(w) for w in (m.group().lower() for m in _WORD.finditer(text)) if w not in _STOP]


@dataclass(frozen=True)
class QueryTerms:
    """A query's stems with their rarity weights, and the kind of answer it asks for."""

    weights: dict[str, float]
    number: bool
    cause: bool
    time: bool

    def __bool__(self) -> bool:
        return bool(self.weights)


def query_terms(query: str, defined: dict[str, tuple[str, ...]] | None = None) -> QueryTerms:
    """The terms of ``query`` (see the module docstring). ``defined``: abbreviations the texts define
    (:func:`abbreviations`): a query that spells out a long form also looks for its abbreviation,
    and one that uses an abbreviation also for its long form's words."""
    weights: dict[str, float] = {}
    for m in _WORD.finditer(query):
        raw = m.group().lower()
        if raw in _STOP:
            continue
        weights[stem(raw)] = 1.0
    for short, long_form in (defined or {}).items():
        if all(w in weights for w in long_form):
            weights.setdefault(short, 1.0)
        elif short in weights:
            for w in long_form:
                weights.setdefault(w, 1.0)
    return QueryTerms(weights, bool(_ASKS_NUMBER.search(query)), bool(_ASKS_CAUSE.search(query)),
                      bool(_ASKS_TIME.search(query)))


def _asked_cue(terms: QueryTerms, text: str) -> bool:
    return ((terms.number and (bool(_NUMBER.search(text)) or any(w in _NUMBER_WORDS for w in text.lower().split())))
            or (terms.cause and bool(_CAUSE.search(text)))
            or (terms.time and bool(_TIME.search(text))))


def lexical_scores(terms: QueryTerms, texts: Sequence[str], *, cue_bonus: float = 0.1,
                   spread_over: Iterable[str] | None = None) -> list[float]:
    """Each text's share of the query's weight it holds (0..1), plus ``cue_bonus`` when it holds
    the kind of answer asked for. ``spread_over``: the texts the spread of a word is measured on
    (default ``texts``)."""
    if not terms:
        return [0.0] * len(texts)
    bags = [set(words(t)) for t in texts]
    pool = bags if spread_over is None else [set(words(t)) for t in spread_over]
    n = max(1, len(pool))
    weight = {}
    for term, given in terms.weights.items():
        found = sum(term in bag for bag in pool)
        weight[term] = given * math.log(1.0 + (n - found + 0.5) / (found + 0.5))
    total = sum(weight.values()) or 1.0
    scores = []
    for text, bag in zip(texts, bags):
        score = sum(w for term, w in weight.items() if term in bag) / total
        if score > 0 and _asked_cue(terms, text):
            score += cue_bonus
        scores.append(score)
    return scores
