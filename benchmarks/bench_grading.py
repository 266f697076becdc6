"""Grader confusion on documents of known design.

1. Every Evidence Inference article is a randomised trial report: the grader's grades and types
   over all 982, beside the majority-class baseline (call everything an RCT).
2. Hand-labelled PubMedQA abstracts (the first 100 PMIDs of the dev set; labels in
   ebm_platform_tests/data/grading_sample.tsv): 50 held out from the rules' development and the
   50 they were corrected on, each with the confusion of the grader's type against the label and
   the majority-label baseline."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from benchmarks.common import datasets_dir
from ebm_platform.corpus.grading import grade_of_type
from ebm_platform.corpus.readers import read_jats
from ebm_platform.evaluation.grading_sample import graded_sample

SAMPLE = Path(__file__).resolve().parents[1] / "ebm_platform_tests" / "data" / "grading_sample.tsv"


def _evidence_inference() -> None:
    files = sorted((datasets_dir() / "evidence_inference" / "xml").glob("*.nxml"))
    grades, types, bases = Counter(), Counter(), Counter()
    started = time.perf_counter()
    for path in files:
        doc = read_jats(path.read_bytes(), path.name)
        grades[doc.grade] += 1
        types[doc.study_design] += 1
        bases[doc.grade_basis.split(":")[0]] += 1
    n = len(files)
    print(
        f"{n} Evidence Inference articles (all randomised trial reports), graded in "
        f"{time.perf_counter() - started:.1f}s"
    )
    print("  grade:         " + ", ".join(f"{g} {grades[g]} ({grades[g] / n:.1%})" for g in "ABCDE"))
    print("  document type: " + ", ".join(f"{t} {c} ({c / n:.1%})" for t, c in types.most_common()))
    print("  decided by:    " + ", ".join(f"{b} {c}" for b, c in bases.most_common()))
    trials = types["randomised controlled trial"] + types["non-randomised trial"]
    print(
        f"  read as an RCT {types['randomised controlled trial'] / n:.1%} (grade C {grades['C'] / n:.1%}), as a "
        f"trial {trials / n:.1%}; majority-class baseline (everything an RCT) 100.0% on this all-RCT set"
    )


def _hand_labelled() -> None:
    graded = graded_sample(datasets_dir(), SAMPLE)
    for part in ("held-out", "development"):
        rows = [(label, got) for kind, label, got in graded if kind == part]
        n = len(rows)
        labels = Counter(label for label, _ in rows)
        majority, majority_n = labels.most_common(1)[0]
        type_hits = sum(label == got for label, got in rows)
        grade_hits = sum(grade_of_type(label) == grade_of_type(got) for label, got in rows)
        print(
            f"{n} hand-labelled PubMedQA documents, {part}: type accuracy {type_hits / n:.0%}, grade accuracy "
            f"{grade_hits / n:.0%}; majority-label baseline ({majority}) {majority_n / n:.0%}"
        )
        confusion = Counter(rows)
        width = max(len(t) for t in labels) + 2
        for label, _ in labels.most_common():
            got = ", ".join(f"{t} {c}" for (gold, t), c in confusion.most_common() if gold == label)
            print(f"  {label:<{width}}-> {got}")


def run() -> None:
    _evidence_inference()
    _hand_labelled()


if __name__ == "__main__":
    run()
