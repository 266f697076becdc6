"""Grader confusion on known designs: every Evidence Inference article is a randomised trial
report. Same run, same articles: the corpus grader (grade A-E from metadata, then the first
matching rule over title and abstract) against the document types the seed strategies read
(retrieval/evidence_levels.py: JATS article-type, title, abstract without the guideline rule,
then random-allocation language in the full text)."""

from __future__ import annotations

import time
from collections import Counter

from benchmarks.common import datasets_dir
from ebm_platform.corpus.readers import read_jats
from ebm_platform.retrieval.evidence_levels import document_type


def run() -> None:
    files = sorted((datasets_dir() / "evidence_inference" / "xml").glob("*.nxml"))
    grades, types, bases = Counter(), Counter(), Counter()
    started = time.perf_counter()
    for path in files:
        doc = read_jats(path.read_bytes(), path.name)
        grades[f"{doc.grade} ({doc.study_design})"] += 1
        design, basis = document_type(doc.article_type, doc.title, doc.text, doc.study_design)
        types[design] += 1
        bases[basis.split(":")[0]] += 1
    n = len(files)
    print(f"{n} Evidence Inference articles (all randomised trial reports), graded in {time.perf_counter() - started:.1f}s")
    print("corpus grader (baseline):")
    for label, count in grades.most_common():
        print(f"  {label:<40}{count:>6}{count / n:>8.1%}")
    print("document type (seed strategies):")
    for label, count in types.most_common():
        print(f"  {label:<40}{count:>6}{count / n:>8.1%}")
    print("  decided by: " + ", ".join(f"{b} {c}" for b, c in bases.most_common()))
    rct_grader = sum(c for label, c in grades.items() if label.startswith("C"))
    print(f"read as a randomised trial: grader {rct_grader / n:.1%} (grade C), "
          f"document type {types['randomised controlled trial'] / n:.1%}; majority-class baseline "
          f"(call everything an RCT) 100.0% on this all-RCT set")


if __name__ == "__main__":
    run()
