"""Landing folders: reading one partition's files, quarantining bad ones, writing landing files."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ebm_platform.atomic import write_text_atomic
from ebm_platform.conditions import Catalogue
from ebm_platform.corpus.model import Document, DocumentError
from ebm_platform.corpus.readers import read_jats, read_markdown, read_pdf
from ebm_platform.corpus.tagging import abstract_of, tag_conditions

READERS = {".md": read_markdown, ".markdown": read_markdown, ".xml": read_jats, ".nxml": read_jats, ".pdf": read_pdf}
MAX_FILE_BYTES = 100 * 2**20  # larger files are not read at all
MAX_TEXT_CHARS = 2_000_000  # 26x the longest Evidence Inference article (76,157): not one document
DOCUMENT_BATCH = 100  # documents handed on at a time, so a partition's step never holds all of them


@dataclass
class QuarantineRecord:
    """A file that was not admitted, and why."""

    condition: str
    path: str
    reason: str
    sha256: str


@dataclass
class PartitionLoad:
    """What reading one landing partition set aside: the files seen and the quarantined ones (filled
    as `read_partition` is read)."""

    quarantine: list[QuarantineRecord] = field(default_factory=list)
    files_seen: int = 0


def landing_files(folder: Path) -> list[Path]:
    """The files of a landing folder that are documents (hidden files and README skipped)."""
    if not folder.is_dir():
        return []
    return sorted(
        p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".") and p.name.lower() != "readme.md"
    )


def file_sha256(path: Path) -> str:
    """The file's SHA-256, read in chunks (never the whole file in memory)."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def unreadable(path: Path, inside: Path) -> str | None:
    """Why a landing file is not read at all (a link to a file outside the resolved folder `inside`,
    or over MAX_FILE_BYTES), checked before any byte of it is read; None when it may be read."""
    if not path.resolve().is_relative_to(inside):
        return "symbolic link to a file outside the landing folder: not read"
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        return f"file of {size / 2**20:.0f} MiB is over the {MAX_FILE_BYTES // 2**20} MiB limit: not read"
    return None


def read_landing_file(path: Path, code: str, catalogue: Catalogue) -> Document:
    """Read, grade and tag one landing file; DocumentError carries the quarantine reason (a file
    `unreadable` names is refused before it is read)."""
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise DocumentError(f"unsupported file type {path.suffix or '(none)'!r}; expected .md, .xml, .nxml or .pdf")
    if reason := unreadable(path, path.parent.resolve()):
        raise DocumentError(reason)
    document = reader(path.read_bytes(), str(path))
    if len(document.text) > MAX_TEXT_CHARS:
        raise DocumentError(
            f"text of {len(document.text):,} characters is over the {MAX_TEXT_CHARS:,} limit for one "
            "document: split it into its parts"
        )
    codes: list[str] = []
    for raw in document.conditions:
        try:
            codes.append(catalogue.canonical(raw))
        except KeyError as exc:
            raise DocumentError(f"unknown condition code {raw!r} in front matter") from exc
    if not codes:
        codes = tag_conditions(catalogue, document.title, abstract_of(document.text), document.text, document.grade)
    if code not in codes:
        codes.insert(0, code)
    document.conditions = list(dict.fromkeys(codes))
    return document


def read_partition(folder: Path, code: str, catalogue: Catalogue, load: PartitionLoad) -> Iterator[list[Document]]:
    """Every valid document of a landing folder, DOCUMENT_BATCH at a time; every bad one quarantined in
    `load` with its reason.

    Files are read oldest first, so a later copy of an admitted document is the duplicate."""
    first_seen: dict[str, str] = {}
    inside = folder.resolve()
    documents: list[Document] = []
    for path in sorted(landing_files(folder), key=lambda p: (p.stat().st_mtime_ns, p.name)):
        load.files_seen += 1
        reason = unreadable(path, inside)
        if reason:  # never read what a link points at outside the folder, nor an oversized file
            load.quarantine.append(
                QuarantineRecord(code, str(path), reason, hashlib.sha256(str(path).encode()).hexdigest())
            )
            continue
        digest = file_sha256(path)
        try:
            document = read_landing_file(path, code, catalogue)
            if document.doc_id in first_seen:
                raise DocumentError(
                    f"duplicate of document {document.doc_id} already admitted from {first_seen[document.doc_id]}"
                )
        except DocumentError as exc:
            load.quarantine.append(QuarantineRecord(code, str(path), str(exc), digest))
            continue
        first_seen[document.doc_id] = str(path)
        documents.append(document)
        if len(documents) == DOCUMENT_BATCH:
            yield documents
            documents = []
    if documents:
        yield documents


def landing_markdown(document: Document) -> str:
    """A normalised landing file: YAML front matter plus the markdown body."""
    meta = {
        "title": document.title,
        "evidence_grade": document.grade,
        "grade_basis": document.grade_basis,
        "study_design": document.study_design,
        "conditions": document.conditions,
        "year": document.year,
        "source": document.source,
        "licence": document.licence,
        "article_type": document.article_type,
    }
    if document.doi:
        meta["doi"] = document.doi
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{front}---\n\n{document.text.strip()}\n"


def write_atomic(path: Path, text: str) -> bool:
    """Write text via a temporary file and rename; return False when the content is unchanged."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    write_text_atomic(path, text)
    return True
