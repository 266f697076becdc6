"""`ebm import`: public datasets -> graded, tagged, normalised landing files."""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from ebm_platform.atomic import write_text_atomic
from ebm_platform.bundled_model import wordpiece_words
from ebm_platform.conditions import Catalogue
from ebm_platform.corpus.graded import cochrane_reviews, read_guideline, review_document
from ebm_platform.corpus.landing import landing_markdown, write_atomic
from ebm_platform.corpus.model import Document, DocumentError
from ebm_platform.corpus.readers import pubmedqa_document, read_jats
from ebm_platform.corpus.tagging import abstract_of, tag_conditions
from ebm_platform.process import cores

DATASETS = ("evidence-inference", "pubmedqa", "cochrane", "guidelines")


@dataclass
class ImportReport:
    """What an import wrote, per condition, and what it left out."""

    dataset: str
    documents: int = 0
    written: int = 0
    unchanged: int = 0
    untagged: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    per_condition: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))

    def as_dict(self) -> dict:
        return {
            "dataset": self.dataset,
            "documents": self.documents,
            "files_written": self.written,
            "files_unchanged": self.unchanged,
            "untagged_documents": len(self.untagged),
            "failed": self.failed,
            "per_condition": {c: dict(sorted(g.items())) for c, g in sorted(self.per_condition.items())},
        }

    def table(self) -> str:
        lines = [
            f"{self.dataset}: {self.documents} documents read, {len(self.untagged)} untagged "
            f"(match no condition), {len(self.failed)} unreadable; "
            f"{self.written} landing files written, {self.unchanged} unchanged",
            f"{'code':<8}{'docs':>6}  grades",
        ]
        for code, grades in sorted(self.per_condition.items()):
            mix = " ".join(f"{g}:{n}" for g, n in sorted(grades.items()))
            lines.append(f"{code:<8}{sum(grades.values()):>6}  {mix}")
        return "\n".join(lines)


def _evidence_inference(root: Path, ids: set[str] | None) -> Iterator[tuple[str, Callable[[], Document]]]:
    folder = root / "evidence_inference" / "xml"
    if not folder.is_dir():
        raise FileNotFoundError(f"no Evidence Inference XML folder at {folder}")
    for path in sorted(folder.glob("PMC*.nxml")):
        if ids is None or path.stem in ids:
            yield path.stem, partial(_read_jats_file, path)


def _read_jats_file(path: Path) -> Document:
    return read_jats(path.read_bytes(), str(path))


def _pubmedqa(root: Path, ids: set[str] | None) -> Iterator[tuple[str, Callable[[], Document]]]:
    path = root / "pubmedqa" / "ori_pqal_dev.json"
    if not path.is_file():
        raise FileNotFoundError(f"no PubMedQA file at {path}")
    records = json.loads(path.read_text(encoding="utf-8"))
    for pmid, record in records.items():
        if ids is None or pmid in ids:
            yield pmid, partial(pubmedqa_document, pmid, record)


def _refused(reason: str) -> Document:
    raise DocumentError(reason)


def _cochrane(root: Path, ids: set[str] | None) -> Iterator[tuple[str, Callable[[], Document]]]:
    folder = root / "graded_evidence"
    if not (folder / "cochrane_auto").is_dir():
        raise FileNotFoundError(
            f"no Cochrane sets under {folder} (expected cochrane_auto/, cochrane_simplification/, "
            "cochrane_conclusions/)"
        )
    reviews, failed = cochrane_reviews(folder)
    for record, reason in sorted(failed.items()):
        yield record, partial(_refused, reason)
    for number in sorted(reviews):
        if ids is None or number in ids:
            yield number, partial(review_document, reviews[number])


def _guidelines(root: Path, ids: set[str] | None) -> Iterator[tuple[str, Callable[[], Document]]]:
    folder = root / "graded_evidence" / "guidelines_lbp"
    if not folder.is_dir():
        raise FileNotFoundError(f"no guideline folder at {folder}")
    vocabulary = wordpiece_words()
    for path in sorted(folder.glob("*.xml")):
        if ids is None or path.stem in ids:
            yield path.stem, partial(read_guideline, path, vocabulary)


SOURCES = {
    "evidence-inference": ("ei", _evidence_inference),
    "pubmedqa": ("pubmedqa", _pubmedqa),
    "cochrane": ("cochrane", _cochrane),
    "guidelines": ("guideline", _guidelines),
}


def import_all(
    datasets_dir: Path,
    landing_dir: Path,
    catalogue: Catalogue,
    reports_dir: Path,
    progress: Callable[[str], None] | None = None,
    datasets: tuple[str, ...] = DATASETS,
) -> dict[str, dict]:
    """Import every dataset (or those named), print each report through `progress`, save them to
    imports.json."""
    reports = {}
    for dataset in datasets:
        report = import_dataset(dataset, datasets_dir, landing_dir, catalogue, progress=progress)
        if progress:
            progress(report.table())
        reports[dataset] = report.as_dict()
    reports_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(reports_dir / "imports.json", json.dumps(reports, indent=2))
    return reports


PARALLEL_FROM = 50  # documents: fewer are read in this process (a worker pool costs about a second to start)
_catalogue: Catalogue | None = None  # a pool worker's catalogue (set once per worker)


def _set_catalogue(catalogue: Catalogue) -> None:
    global _catalogue
    _catalogue = catalogue


def _prepare(load: Callable[[], Document]) -> tuple[Document, str | None] | DocumentError:
    """Read, grade and tag one document; its landing text when it matches a condition."""
    try:
        document = load()
    except DocumentError as exc:
        return exc
    document.conditions = tag_conditions(
        _catalogue, document.title, abstract_of(document.text), document.text, document.grade
    )
    return document, landing_markdown(document) if document.conditions else None


def import_dataset(
    dataset: str,
    datasets_dir: Path,
    landing_dir: Path,
    catalogue: Catalogue,
    ids: set[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ImportReport:
    """Read a dataset, grade and tag each document (in a pool of one process per core when there
    are many), write one landing file per tagged code, in the dataset's order."""
    if dataset not in SOURCES:
        raise ValueError(f"unknown dataset {dataset!r}; choose one of {', '.join(DATASETS)}")
    prefix, reader = SOURCES[dataset]
    report = ImportReport(dataset)
    items = list(reader(Path(datasets_dir), ids))
    workers = min(cores(), len(items) // PARALLEL_FROM)
    if workers > 1:  # spawned, not forked: the caller may hold threads (LanceDB, Dagster)
        pool = ProcessPoolExecutor(workers, multiprocessing.get_context("spawn"), _set_catalogue, (catalogue,))
        results = pool.map(_prepare, [load for _, load in items], chunksize=16)
    else:
        pool = None
        _set_catalogue(catalogue)
        results = map(_prepare, [load for _, load in items])
    try:
        for n, ((ident, _), result) in enumerate(zip(items, results), 1):
            if isinstance(result, DocumentError):
                report.failed[ident] = str(result)
                continue
            document, text = result
            report.documents += 1
            if text is None:
                report.untagged.append(ident)
                continue
            for code in document.conditions:
                report.per_condition[code][document.grade] += 1
                changed = write_atomic(landing_dir / code / f"{prefix}-{ident}.md", text)
                report.written += changed
                report.unchanged += not changed
            if progress and n % 200 == 0:
                progress(f"{dataset}: {n} records read")
    finally:
        if pool is not None:
            pool.shutdown()
    return report
