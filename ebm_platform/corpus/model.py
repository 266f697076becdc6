"""The document model shared by every reader."""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field

GRADES = ("A", "B", "C", "D", "E")
GRADE_LABELS = {
    "A": "guideline / consensus",
    "B": "systematic review / meta-analysis",
    "C": "randomised controlled trial",
    "D": "cohort study",
    "E": "other research",
}


CONCLUSIONS = "Authors' conclusions"  # a systematic review's closing section (corpus/graded.py)


def section_text(markdown: str, heading: str) -> str:
    """The text of a document's `## <heading>` sections (one after another when it has several, as a review
    that two datasets give has), "" when it has none."""
    found = re.findall(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## (?!#)|\Z)", markdown, re.M | re.S)
    return "\n\n".join(text.strip() for text in found)


def abstract_section(markdown: str) -> str:
    """A document's abstract (its "## Abstract" section, as the JATS reader writes it), "" when it has none."""
    return section_text(markdown, "Abstract")


class DocumentError(ValueError):
    """A document that cannot be admitted; its message is the quarantine reason."""


def content_hash(text: str) -> str:
    """Stable document id: sha256 of the normalised markdown text (first 16 hex digits)."""
    normalised = "\n".join(line.rstrip() for line in text.strip().splitlines())
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()[:16]


@dataclass
class Document:
    """A graded, condition-tagged evidence document with markdown text."""

    title: str
    text: str
    source: str
    year: int | None = None
    licence: str = "unknown"
    grade: str = "E"
    grade_basis: str = "none:no design stated (lowest level)"
    study_design: str = "expert opinion"
    conditions: list[str] = field(default_factory=list)
    article_type: str = ""
    doi: str = ""
    path: str = ""
    doc_id: str = ""

    def __post_init__(self) -> None:
        if not self.doc_id:
            self.doc_id = content_hash(self.text)

    def as_row(self) -> dict:
        row = asdict(self)
        row["n_chars"] = len(self.text)
        return row
