"""Distant supervision: Evidence Inference's doctor-written prompts projected onto article words.

For each article the text is its title and abstract (what EBM-NLP annotates). Every prompt's
intervention and comparator strings become I, its outcome string O, by projection:

- a string's *name words* are its lower-cased word tokens that are neither INNER function words
  nor numbers (numbers and units may sit inside a projected span but never decide it);
- a *run* is a maximal stretch of article words that are name words of the string, INNER words
  or numbers, trimmed to start and end on a name word (a closing bracket may end it);
- a run is projected when it holds at least half of the string's distinct name words, or one
  name word that is specific: at least 4 characters and in fewer than 5% of the training
  articles (document frequency from the train split only).

Population (P) has no doctor-written gold here; its labels are a proxy from one pattern (a
person noun with its "with/aged/undergoing ..." clause, optionally led by a count), documented
as such wherever P figures are printed. Later spans overwrite earlier ones: P, then I, then O.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ebm_platform.benchmark.evidence_inference import article_ids, prompts
from ebm_platform.corpus.readers import parse_jats
from ebm_platform.index.window_index import index_text
from ebm_platform.pico.spans import CLASSES, INNER, Words, label_chars

SPECIFIC_DF = 0.05
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)*$|^(?:mg|g|kg|ml|mcg|µg|iu|%|h|hr|hrs|min|mins|days?|weeks?|months?|years?)$")
PERSON = (
    r"patients|participants|subjects|adults|children|adolescents|women|men|girls|boys|athletes|individuals|"
    r"people|persons|volunteers|runners|players|infants|neonates|newborns|mothers|smokers|students|workers|"
    r"residents|outpatients|inpatients|survivors|users|recruits|soldiers|employees|veterans|elderly|cases"
)
_LEAD_STOP = {
    "the",
    "a",
    "an",
    "of",
    "in",
    "on",
    "and",
    "or",
    "to",
    "for",
    "with",
    "we",
    "all",
    "among",
    "total",
    "that",
    "this",
    "these",
    "were",
    "was",
    "compared",
    "than",
    "versus",
    "randomized",
    "randomised",
    "enrolled",
    "included",
    "recruited",
    "by",
    "from",
    "at",
    "as",
    "into",
    "between",
}
_LEAD = rf"(?:(?!(?:{'|'.join(sorted(_LEAD_STOP))})\b)[A-Za-z-]+\s+){{0,3}}"  # up to 3 qualifiers, no function word
_POPULATION = re.compile(
    rf"\b(?:\d[\d,]*\s+)?{_LEAD}(?:{PERSON})\s+(?:with|who (?:had|have|were|underwent)|aged|"
    r"undergoing|after|following|suffering from|diagnosed with|presenting with|scheduled for|"
    r"admitted (?:to|for|with)|at risk of|from)\s+[^.;:()]{3,90}?(?=\s+(?:were|was|are|is|who|and were)\b|[.;:(]|,\s|$)",
    re.I,
)


def article_text(path: Path) -> tuple[str, int]:
    """Title and abstract of one JATS article as the window index writes a window ("title.
    section. text"), and where the abstract starts; headings are reduced to their words."""
    article = parse_jats(path.read_bytes())
    return index_text(article.title, "Abstract", re.sub(r"#+\s*", "", article.abstract))


def name_words(phrase: str) -> set[str]:
    """The words of a doctor-written string that decide a projection."""
    return {
        w
        for w in (t.lower() for t in Words.of(phrase).tokens)
        if w not in INNER and not _NUMBER.match(w) and re.search(r"\w", w)
    }


def population_spans(text: str) -> list[tuple[int, int]]:
    """Proxy P spans: person noun phrases with their defining clause (see module doc)."""
    return [m.span() for m in _POPULATION.finditer(text)]


@dataclass
class Projector:
    """Projects strings onto words with document frequencies from the training articles."""

    df: Counter
    documents: int

    @classmethod
    def fit(cls, texts: Iterable[str]) -> Projector:
        df: Counter = Counter()
        n = 0
        for text in texts:
            df.update({t.lower() for t in Words.of(text).tokens})
            n += 1
        return cls(df, max(n, 1))

    def specific(self, word: str) -> bool:
        return len(word) >= 4 and self.df.get(word, 0) / self.documents < SPECIFIC_DF

    def project(
        self, words: Words, phrase: str, exclude: set[str] = frozenset(), single: bool = True
    ) -> list[tuple[int, int]]:
        """Word ranges [i, j) where `phrase` is projected (its name words minus `exclude`); with
        `single`, one specific name word suffices."""
        gold = name_words(phrase) - exclude
        if not gold:
            return []
        lower = [t.lower() for t in words.tokens]
        allowed = [w in gold or w in INNER or bool(_NUMBER.match(w)) for w in lower]
        out, i = [], 0
        while i < len(lower):
            if lower[i] not in gold:
                i += 1
                continue
            j = i
            while j < len(lower) and allowed[j]:
                j += 1
            end = j
            while end > i and lower[end - 1] not in gold and lower[end - 1] != ")":
                end -= 1
            hit = {w for w in lower[i:end] if w in gold}
            if len(hit) >= math.ceil(len(gold) / 2) or (single and any(self.specific(w) for w in hit)):
                out.append((i, end))
            i = j
        return out


@dataclass
class Example:
    """One article's text with its distant word labels."""

    pmcid: str
    words: Words
    labels: np.ndarray
    prefix: int  # characters of the "title. Abstract. " prefix


def label_article(projector: Projector, pmcid: str, text: str, prefix: int, rows: list[dict]) -> Example:
    """P (proxy pattern), then I (intervention, comparator), then O (outcome) labels."""
    words = Words.of(text)
    labels = label_chars(words, [(start, end, "P") for start, end in population_spans(text)])
    for fields, letter in ((("intervention", "comparator"), "I"), (("outcome",), "O")):
        for row in rows:
            # an outcome string naming an arm ("pain with naproxen") never makes the arm an outcome
            arms = (
                name_words(f"{row.get('intervention') or ''} {row.get('comparator') or ''}") if letter == "O" else set()
            )
            for field in fields:
                for i, j in projector.project(words, row.get(field) or "", arms, single=letter == "I"):
                    labels[i:j] = CLASSES.index(letter)
    return Example(pmcid, words, labels, prefix)


def split_examples(
    datasets_dir: Path,
    split: str,
    projector: Projector | None = None,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[Example], Projector]:
    """Labelled title+abstract examples of a split's articles (projector fitted here on train)."""
    root = Path(datasets_dir) / "evidence_inference" / "xml"
    ids = sorted(article_ids(datasets_dir, split))[:limit] if limit else sorted(article_ids(datasets_dir, split))
    by_article: dict[str, list[dict]] = {}
    for row in prompts(datasets_dir, split).iter_rows(named=True):
        by_article.setdefault(row["pmcid"], []).append(row)
    texts = {}
    for pmcid in ids:
        if pmcid in by_article:
            texts[pmcid] = article_text(root / f"{pmcid}.nxml")
    if projector is None:
        projector = Projector.fit(text for text, _ in texts.values())
    examples = [
        label_article(projector, pmcid, text, prefix, by_article[pmcid]) for pmcid, (text, prefix) in texts.items()
    ]
    if progress:
        progress(f"{split}: {len(examples)} articles labelled by projection")
    return examples, projector
