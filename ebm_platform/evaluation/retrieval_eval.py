"""Retrieval evaluation on real benchmarks: R@k, Hit@k and MRR per strategy.

Evidence Inference: one question per labelled prompt, "What is the effect of <I> compared with
<C> on <O>?"; gold windows are the windows of the prompt's article that contain an annotated
evidence span (compared after folding case, punctuation and whitespace; spans longer than 120
characters are matched on their first or last 120). PubMedQA: the question as asked; gold windows
are the windows of its source abstract.
R@k = |gold in top k| / |gold| (averaged over questions); Hit@k = share of questions with any
gold window in the top k; MRR = mean of 1 / rank of the first gold window in the returned list.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import polars as pl

from ebm_platform.benchmark.evidence_inference import labelled_prompts
from ebm_platform.retrieval.pipeline import Retriever

SPAN_CHARS = 120


def fold(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def windows_of(lake: Path) -> pl.DataFrame:
    files = sorted((Path(lake) / "assets" / "evidence_windows").glob("*.parquet"))
    if not files:
        raise FileNotFoundError(f"no evidence windows in {lake}")
    return pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed").unique("window_id", keep="first")


def gold_for_spans(windows: list[tuple[str, str]], spans: list[str]) -> set[str]:
    """Ids of windows (id, folded text) that contain any of the evidence spans."""
    gold: set[str] = set()
    for span in spans:
        folded = fold(span)
        if len(folded) < 12:
            continue
        probes = [folded] if len(folded) <= SPAN_CHARS else [folded[:SPAN_CHARS].rsplit(" ", 1)[0],
                                                               folded[-SPAN_CHARS:].split(" ", 1)[-1]]
        for window_id, text in windows:
            if any(p in text for p in probes):
                gold.add(window_id)
    return gold


def questions(benchmark: str, split: str, datasets_dir: Path, lake: Path) -> tuple[list[dict], Counter]:
    """Questions with their gold window ids, and the reasons any were dropped."""
    windows = windows_of(lake)
    by_source: dict[str, list[tuple[str, str]]] = {}
    for window_id, source, text in windows.select("window_id", "source", "text").iter_rows():
        by_source.setdefault(source, []).append((window_id, fold(text)))
    dropped: Counter = Counter()
    out: list[dict] = []
    if benchmark == "evidence-inference":
        for row in labelled_prompts(datasets_dir, split).iter_rows(named=True):
            article = by_source.get(f"evidence_inference:{row['pmcid']}")
            if not article:
                dropped["article not in the evaluation corpus"] += 1
                continue
            gold = gold_for_spans(article, row["evidence"])
            if not gold:
                dropped["no gold window could be located"] += 1
                continue
            out.append({"id": f"ei-{row['prompt_id']}", "gold": gold,
                        "question": f"What is the effect of {row['intervention']} compared with "
                                    f"{row['comparator']} on {row['outcome']}?"})
    elif benchmark == "pubmedqa":
        if split not in ("validation", "all"):
            raise ValueError("PubMedQA here holds only the 500 non-test questions: use --split validation (or all)")
        records = json.loads((Path(datasets_dir) / "pubmedqa" / "ori_pqal_dev.json").read_text(encoding="utf-8"))
        for pmid, record in records.items():
            gold = {w for w, _ in by_source.get(f"pubmedqa:{pmid}", [])}
            if not gold:
                dropped["abstract not in the evaluation corpus"] += 1
                continue
            out.append({"id": f"pubmedqa-{pmid}", "gold": gold, "question": record["QUESTION"]})
    else:
        raise ValueError(f"unknown benchmark {benchmark!r}")
    return out, dropped


def evaluate(retriever: Retriever, items: list[dict], strategies: list[str], k: int = 10,
             progress: Callable[[str], None] | None = None) -> dict[str, dict]:
    """R@k, Hit@k, MRR and question counts per strategy, measured in one run."""
    results: dict[str, dict] = {}
    for strategy in strategies:
        recall = hit = rr = 0.0
        started = time.perf_counter()
        for n, item in enumerate(items, 1):
            ranked = [c.window_id for c in retriever.retrieve(item["question"], strategy).candidates]
            found = item["gold"] & set(ranked[:k])
            recall += len(found) / len(item["gold"])
            hit += bool(found)
            rr += next((1 / i for i, w in enumerate(ranked, 1) if w in item["gold"]), 0.0)
            if progress and n % 50 == 0:
                progress(f"{strategy}: {n}/{len(items)} questions")
        total = max(len(items), 1)
        results[strategy] = {f"R@{k}": round(recall / total, 4), f"Hit@{k}": round(hit / total, 4),
                             "MRR": round(rr / total, 4), "questions": len(items),
                             "seconds_per_question": round((time.perf_counter() - started) / total, 3)}
    return results
