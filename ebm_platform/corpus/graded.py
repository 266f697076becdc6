"""Graded evidence sources: Cochrane systematic reviews (grade B) and clinical practice guidelines
(grade A) from `graded_evidence/` in the datasets folder.

A grade comes from what the source is, never from words in its text: every Cochrane review is a
systematic review (B); each guideline file is graded by its entry in GUIDELINE_SOURCES (a clinical
practice guideline A, an overview of guidelines B). A file with no entry cannot be graded and is
refused with that reason.

Cochrane reviews come from three research datasets that overlap; they are joined on the review
number (CD or MR and six digits, in the DOI or the review id) and each review keeps the richest
text: the titled abstract (Main results, Authors' conclusions) when a set has it, else the results
paragraph, else the conclusions, with the conclusions added where the kept text lacks them."""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from ebm_platform.corpus.model import CONCLUSIONS, Document, DocumentError
from ebm_platform.corpus.pdf_text import guideline_markdown

REVIEW_NUMBER = re.compile(r"\b(?:CD|MR)\d{6}\b")
COCHRANE_DOI = "10.1002/14651858.{number}"
COCHRANE_LICENCE = "Cochrane abstract (publisher's copyright), redistributed by a research dataset; research use"


@dataclass(frozen=True)
class GuidelineSource:
    """What a guideline file is: its title, year, grade and document type, and its licence."""

    title: str
    year: int
    grade: str
    design: str
    licence: str


GUIDELINE_SOURCES = {  # keyed by file name in graded_evidence/guidelines_lbp/ (see its README)
    "cpg_va-department_of_defense.xml": GuidelineSource(
        "VA/DoD Clinical Practice Guideline for the Diagnosis and Treatment of Low Back Pain",
        2022,
        "A",
        "guideline",
        "US government work (public domain)",
    ),
    "cpg_world_health_organization.xml": GuidelineSource(
        "WHO guideline for non-surgical management of chronic primary low back pain in adults in primary and "
        "community care settings: executive summary",
        2023,
        "A",
        "guideline",
        "CC BY-NC-SA 3.0 IGO",
    ),
    "cpg_review_of_cpgs.xml": GuidelineSource(
        "Clinical practice guidelines for the management of non-specific low back pain in primary care: "
        "an updated overview",
        2018,
        "B",
        "systematic review",
        "CC BY 4.0",
    ),
}


@dataclass
class CochraneReview:
    """One review joined across the sets: number, DOI, title and its sections (heading, text)."""

    number: str
    doi: str = ""
    title: str = ""
    sections: list[tuple[str, str]] = field(default_factory=list)
    conclusions: str = ""
    sets: list[str] = field(default_factory=list)

    def chars(self) -> int:
        return sum(len(text) for _, text in self.sections)


def _number(text: str) -> str | None:
    match = REVIEW_NUMBER.search(text or "")
    return match.group() if match else None


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def cochrane_reviews(folder: Path) -> tuple[dict[str, CochraneReview], dict[str, str]]:
    """Every review of the three Cochrane sets under `folder`, joined on the review number, and the
    records that could not be read (record -> reason)."""
    reviews: dict[str, CochraneReview] = {}
    failed: dict[str, str] = {}

    def review(number: str, set_name: str) -> CochraneReview:
        found = reviews.setdefault(number, CochraneReview(number))
        if set_name not in found.sets:
            found.sets.append(set_name)
        return found

    for path in sorted((folder / "cochrane_auto").glob("*.json")):
        for n, record in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            number = _number(record.get("doi", ""))
            sections = [(s.get("heading", "").strip(), s.get("text", "").strip()) for s in record.get("abstract") or []]
            if not number or not any(text for _, text in sections):
                failed[f"cochrane_auto/{path.name}#{n}"] = "no review number in its DOI, or no abstract text"
                continue
            found = review(number, "cochrane_auto")
            found.doi, found.title = record["doi"].strip(), str(record.get("name") or "").strip()
            found.sections = [(h, t) for h, t in sections if t]
    for path in sorted((folder / "cochrane_simplification").glob("*.source")):
        for n, (source, doi) in enumerate(zip(_lines(path), _lines(path.with_suffix(".doi")))):
            number = _number(doi)
            if not source.strip() and not doi.strip():
                continue
            if not number or not source.strip():
                failed[f"cochrane_simplification/{path.name}#{n}"] = "no review number in its DOI, or no text"
                continue
            found = review(number, "cochrane_simplification")
            found.doi = found.doi or doi.strip()
            if len(source.strip()) > found.chars():
                found.sections = [("Main results and authors' conclusions", source.strip())]
    for path in sorted((folder / "cochrane_conclusions").glob("*-targets.csv")):
        with path.open(encoding="utf-8", newline="") as handle:
            for n, record in enumerate(csv.DictReader(handle)):
                number, text = _number(record.get("ReviewID", "")), (record.get("Target") or "").strip()
                if not number or not text:
                    failed[f"cochrane_conclusions/{path.name}#{n}"] = "no review id, or no conclusions text"
                    continue
                review(number, "cochrane_conclusions").conclusions = text
    return reviews, failed


def _first_sentence(text: str, limit: int = 160) -> str:
    """The first sentence of a text, cut at a word boundary within `limit` characters (a title for a
    review whose dataset gives none)."""
    sentence = re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0].rstrip(".")
    return sentence if len(sentence) <= limit else sentence[:limit].rsplit(" ", 1)[0] + " ..."


def review_document(review: CochraneReview) -> Document:
    """A Cochrane review as a grade-B document (a systematic review by what the source is)."""
    sections = list(review.sections)
    have = " ".join(text for _, text in sections)
    if review.conclusions and review.conclusions[:80] not in have:
        sections.append((CONCLUSIONS, review.conclusions))
    if not sections:
        raise DocumentError(f"Cochrane review {review.number} has no text")
    # without a title, the authors' conclusions say what the review is about ("Fourteen trials (709
    # participants) met the inclusion criteria", the results' first sentence, says nothing)
    headline = _first_sentence(review.conclusions or sections[-1][1])
    title = review.title or f"Cochrane systematic review {review.number}: {headline}"
    body = "\n\n".join([f"# {title}", *(f"## {heading}\n\n{text}" for heading, text in sections)])
    return Document(
        title=title,
        text=body,
        source=f"cochrane:{review.number}",
        licence=COCHRANE_LICENCE,
        grade="B",
        grade_basis=f"source:Cochrane Database of Systematic Reviews ({', '.join(review.sets)})",
        study_design="systematic review",
        article_type="systematic-review",
        doi=review.doi or COCHRANE_DOI.format(number=review.number),
        path=f"cochrane:{review.number}",
    )


def read_guideline(path: Path, vocabulary: frozenset[str]) -> Document:
    """A guideline file (`<page><title/><url/><content/></page>`, text extracted from a PDF) as a
    document graded by its GUIDELINE_SOURCES entry, cleaned and sectioned so that each
    recommendation and its strength is one block."""
    source = GUIDELINE_SOURCES.get(path.name)
    if source is None:
        raise DocumentError(
            f"{path.name} is not a known guideline source: its grade cannot be decided from what "
            f"it is (known: {', '.join(sorted(GUIDELINE_SOURCES))})"
        )
    try:
        content = ET.fromstring(path.read_bytes()).findtext("content")
    except ET.ParseError as exc:
        raise DocumentError(f"not a <page> XML record: {exc}") from exc
    if not (content or "").strip():
        raise DocumentError("the <content> element is missing or empty")
    markdown, found = guideline_markdown(source.title, content, vocabulary, source.title.split(":")[0])
    kind = "clinical practice guideline" if source.grade == "A" else "overview of guidelines"
    return Document(
        title=source.title,
        text=markdown,
        source=f"guideline:{path.stem}",
        year=source.year,
        licence=source.licence,
        grade=source.grade,
        grade_basis=f"source:{kind} ({found} recommendations with their strength)",
        study_design=source.design,
        article_type="practice-guideline" if source.grade == "A" else "systematic-review",
        path=f"guideline:{path.name}",
    )
