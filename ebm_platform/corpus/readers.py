"""Readers from raw inputs (landing markdown, JATS XML, PubMedQA records, PDF) to Documents."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import yaml

from ebm_platform.corpus.grading import grade_document
from ebm_platform.corpus.model import Document, DocumentError

FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*\r?\n?(.*)\Z", re.S)
_XLINK = "{http://www.w3.org/1999/xlink}href"
_SKIP_INLINE = {"table-wrap", "fig", "list", "disp-formula", "table", "xref-group"}


def decode_text(data: bytes) -> str:
    """Strict UTF-8 decoding with clear errors for empty, binary and non-UTF-8 input."""
    if not data.strip():
        raise DocumentError("empty file")
    if b"\x00" in data[:8192]:
        raise DocumentError("binary file (NUL bytes), not a text document")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"not valid UTF-8 text (byte {exc.start}: {exc.reason})") from exc


def read_markdown(data: bytes, path: str = "") -> Document:
    """A landing file: markdown with YAML front matter (title, evidence_grade, conditions, ...)."""
    text = decode_text(data)
    match = FRONT_MATTER.match(text)
    if not match:
        raise DocumentError("markdown without YAML front matter (expected a leading '---' block)")
    try:
        meta = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise DocumentError(f"invalid YAML front matter: {str(exc).splitlines()[0]}") from exc
    if not isinstance(meta, dict):
        raise DocumentError("front matter is not a mapping of fields")
    title = str(meta.get("title") or "").strip()
    if not title:
        raise DocumentError("front matter lacks a 'title'")
    body = match.group(2).strip()
    if not body:
        raise DocumentError("document body is empty")
    grade, design, basis = grade_document(meta.get("evidence_grade"), str(meta.get("article_type", "")), title, body)
    conditions = meta.get("conditions") or []
    if isinstance(conditions, str):
        conditions = [c.strip() for c in conditions.split(",") if c.strip()]
    year = meta.get("year")
    try:
        year = int(year) if year not in (None, "") else None
    except (TypeError, ValueError) as exc:
        raise DocumentError(f"year {year!r} is not a number") from exc
    return Document(
        title=title,
        text=body,
        source=str(meta.get("source") or f"landing:{path}"),
        year=year,
        licence=str(meta.get("licence") or meta.get("license") or "unknown"),
        grade=grade,
        grade_basis=str(meta.get("grade_basis") or basis),
        study_design=str(meta.get("study_design") or design),
        conditions=[str(c) for c in conditions],
        article_type=str(meta.get("article_type", "")),
        doi=str(meta.get("doi") or ""),
        path=path,
    )


def _text(el: ET.Element) -> str:
    """Visible text of an element, skipping nested tables/figures/lists, whitespace folded."""
    parts: list[str] = [el.text or ""]
    for child in el:
        if child.tag not in _SKIP_INLINE:
            parts.append(_text(child))
        parts.append(child.tail or "")
    return re.sub(r"\s+", " ", "".join(parts)).strip()


def _table_markdown(wrap: ET.Element) -> list[str]:
    """A table-wrap as blocks: its caption paragraph, then one markdown row per table row."""
    blocks: list[str] = []
    label = _text(wrap.find("label")) if wrap.find("label") is not None else ""
    caption = wrap.find("caption")
    cap = _text(caption) if caption is not None else ""
    if label or cap:
        blocks.append(f"{label}. {cap}".strip(". ").strip())
    rows = []
    for tr in wrap.iter("tr"):
        cells = [_text(c).replace("|", "/") for c in tr if c.tag in ("td", "th")]
        if any(cells):
            rows.append("| " + " | ".join(cells) + " |")
    if rows:
        blocks.append("\n".join(rows))
    return blocks


def _blocks_of(el: ET.Element) -> list[str]:
    """Paragraph-level markdown blocks under a section-like element (no sub-sections)."""
    blocks: list[str] = []
    for child in el:
        tag = child.tag
        if tag == "p":
            text = _text(child)
            if text:
                blocks.append(text)
            for nested in child:
                if nested.tag in ("table-wrap", "list", "fig"):
                    blocks.extend(_blocks_of_single(nested))
        elif tag in ("table-wrap", "list", "fig", "disp-quote"):
            blocks.extend(_blocks_of_single(child))
    return blocks


def _blocks_of_single(el: ET.Element) -> list[str]:
    if el.tag == "table-wrap":
        return _table_markdown(el)
    if el.tag == "list":
        return [f"- {_text(item)}" for item in el.findall("list-item") if _text(item)]
    if el.tag == "fig":
        caption = el.find("caption")
        return [_text(caption)] if caption is not None and _text(caption) else []
    return [_text(el)] if _text(el) else []


def _section_markdown(sec: ET.Element, level: int, out: list[str]) -> None:
    title_el = sec.find("title")
    title = _text(title_el) if title_el is not None else ""
    if title:
        out.append(f"{'#' * min(level, 6)} {title}")
    out.extend(_blocks_of(sec))
    for sub in sec.findall("sec"):
        _section_markdown(sub, level + 1, out)


@dataclass
class JatsArticle:
    """Metadata and markdown of one JATS article."""

    pmcid: str
    title: str
    journal: str
    year: int | None
    licence: str
    article_type: str
    abstract: str
    markdown: str


def _licence(meta: ET.Element) -> str:
    permissions = meta.find("permissions")
    scope = permissions if permissions is not None else meta
    licence = scope.find(".//license")
    if licence is not None:
        href = licence.get(_XLINK) or licence.get("href")
        if href:
            return href
        if licence.get("license-type"):
            return str(licence.get("license-type"))
        text = _text(licence)
        if text:
            return text[:200]
    statement = scope.find(".//copyright-statement")
    return _text(statement)[:200] if statement is not None else "none found"


def parse_jats(data: bytes) -> JatsArticle:
    """Parse a PMC JATS/NLM article into metadata plus markdown with headings."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise DocumentError(f"malformed XML: {exc}") from exc
    if root.tag != "article":
        raise DocumentError(f"not a JATS article (root element <{root.tag}>)")
    meta = root.find("front/article-meta")
    if meta is None:
        raise DocumentError("JATS article without front/article-meta")
    title_el = meta.find("title-group/article-title")
    title = _text(title_el) if title_el is not None else ""
    if not title:
        raise DocumentError("JATS article without an article-title")
    pmcid = next((a.text or "" for a in meta.findall("article-id") if a.get("pub-id-type") == "pmc"), "")
    years = [int(y.text) for y in meta.findall("pub-date/year") if (y.text or "").strip().isdigit()]
    journal_el = root.find("front/journal-meta/journal-title")
    if journal_el is None:
        journal_el = root.find("front/journal-meta/journal-title-group/journal-title")
    out: list[str] = [f"# {title}"]
    abstract_blocks: list[str] = []
    for abstract in meta.findall("abstract"):
        if abstract.get("abstract-type") not in (None, "", "structured"):
            continue
        out.append("## Abstract")
        start = len(out)
        out.extend(_blocks_of(abstract))
        for sec in abstract.findall("sec"):
            _section_markdown(sec, 3, out)
        abstract_blocks = out[start:]
        break
    body = root.find("body")
    if body is not None:
        loose = _blocks_of(body)
        if loose:
            out.append("## Main text")
            out.extend(loose)
        for sec in body.findall("sec"):
            _section_markdown(sec, 2, out)
    markdown = "\n\n".join(b for b in out if b.strip())
    if len(out) <= 1:
        raise DocumentError("JATS article has no abstract or body text")
    return JatsArticle(
        pmcid=f"PMC{pmcid}" if pmcid and not pmcid.startswith("PMC") else pmcid,
        title=title,
        journal=_text(journal_el) if journal_el is not None else "",
        year=min(years) if years else None,
        licence=_licence(meta),
        article_type=root.get("article-type", ""),
        abstract=" ".join(abstract_blocks),
        markdown=markdown,
    )


def read_jats(data: bytes, path: str = "") -> Document:
    """A JATS XML file as a graded Document (conditions are tagged by the caller)."""
    article = parse_jats(data)
    grade, design, basis = grade_document(None, article.article_type, article.title, article.markdown)
    return Document(
        title=article.title,
        text=article.markdown,
        source=f"evidence_inference:{article.pmcid}" if article.pmcid else f"jats:{path}",
        year=article.year,
        licence=article.licence,
        grade=grade,
        grade_basis=basis,
        study_design=design,
        article_type=article.article_type,
        path=path,
    )


def pubmedqa_document(pmid: str, record: dict) -> Document:
    """One PubMedQA record: the question is the title, each labelled context a section."""
    question = str(record.get("QUESTION", "")).strip()
    contexts = record.get("CONTEXTS") or []
    labels = record.get("LABELS") or ["ABSTRACT"] * len(contexts)
    if not question or not contexts:
        raise DocumentError(f"PubMedQA record {pmid} lacks a question or contexts")
    parts = [f"# {question}"]
    for label, context in zip(labels, contexts):
        parts.append(f"## {str(label).strip().title()}")
        parts.append(str(context).strip())
    markdown = "\n\n".join(parts)
    grade, design, basis = grade_document(None, "", question, markdown)
    year = str(record.get("YEAR", "")).strip()
    return Document(
        title=question,
        text=markdown,
        source=f"pubmedqa:{pmid}",
        year=int(year) if year.isdigit() else None,
        licence="PubMedQA (MIT); abstract text from PubMed",
        grade=grade,
        grade_basis=basis,
        study_design=design,
        path=f"pubmedqa:{pmid}",
    )


def read_pdf(data: bytes, path: str = "") -> Document:
    """A PDF through pypdf: pages' text split into paragraphs, title from metadata or first line."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, ValueError, KeyError) as exc:
        raise DocumentError(f"unreadable PDF: {exc}") from exc
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    if not text:
        raise DocumentError("PDF has no extractable text (scanned image?)")
    meta_title = (reader.metadata.title if reader.metadata else None) or ""
    title = meta_title.strip() or text.strip().splitlines()[0][:200]
    paragraphs = [re.sub(r"\s*\n\s*", " ", p).strip() for p in re.split(r"\n\s*\n", text)]
    markdown = f"# {title}\n\n" + "\n\n".join(p for p in paragraphs if p)
    grade, design, basis = grade_document(None, "", title, markdown)
    return Document(
        title=title,
        text=markdown,
        source=f"pdf:{path}",
        grade=grade,
        grade_basis=basis,
        study_design=design,
        path=path,
    )
