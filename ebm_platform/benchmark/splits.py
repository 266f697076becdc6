"""Query-grouped train / validation / test splits (60/20/20), stratified by condition and source.

Deterministic: within each (condition, source) stratum, question groups (questions with the same
folded text form one group, so a repeated question never straddles splits) are ordered by a
seeded hash and cut at 60% and 80%."""

from __future__ import annotations

import hashlib
import re

import polars as pl

RATIOS = (0.6, 0.2, 0.2)


def _group(question: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", question.lower()).strip()


def make_splits(bench: pl.DataFrame, seed: str = "ebm-platform") -> pl.DataFrame:
    """question_id, condition, source, split (train / validation / test)."""
    out = []
    for (condition, source), stratum in bench.group_by("condition", "source", maintain_order=True):
        groups: dict[str, list[str]] = {}
        for qid, question in stratum.select("question_id", "question").iter_rows():
            groups.setdefault(_group(question), []).append(qid)
        ordered = sorted(groups, key=lambda g: hashlib.sha256(f"{seed}|{g}".encode()).hexdigest())
        n = len(ordered)
        cut_train, cut_val = round(n * RATIOS[0]), round(n * (RATIOS[0] + RATIOS[1]))
        for i, key in enumerate(ordered):
            split = "train" if i < cut_train else "validation" if i < cut_val else "test"
            out.extend({"question_id": q, "condition": condition, "source": source, "split": split} for q in groups[key])
    return pl.DataFrame(out, schema={"question_id": pl.String, "condition": pl.String, "source": pl.String,
                                     "split": pl.String})
