"""The grader against hand labels: a labelled sample of documents of known design (a TSV of pmid,
set, label, why; '#' lines are comments; set is development or held-out) read through the same
importer the corpus uses, and each document's type as the corpus grader gives it."""

from __future__ import annotations

import csv
from pathlib import Path

from ebm_platform.corpus.importers import SOURCES


def read_labels(path: Path) -> dict[str, tuple[str, str]]:
    """pmid -> (set, hand label: a document type on the 9-level hierarchy)."""
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    return {row["pmid"]: (row["set"], row["label"]) for row in csv.DictReader(lines, delimiter="\t")}


def graded_sample(datasets_dir: Path, labels_path: Path) -> list[tuple[str, str, str]]:
    """(set, hand label, grader's document type) for each labelled PubMedQA record, in PMID order."""
    labels = read_labels(labels_path)
    _, records = SOURCES["pubmedqa"]
    typed = {pmid: load().study_design for pmid, load in records(Path(datasets_dir), set(labels))}
    missing = sorted(set(labels) - set(typed))
    if missing:
        raise FileNotFoundError(f"labelled PubMedQA records not in the dataset: {', '.join(missing[:5])}")
    return [(*labels[pmid], typed[pmid]) for pmid in sorted(labels)]
