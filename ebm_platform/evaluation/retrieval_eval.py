"""Retrieval evaluation on real benchmarks: R@k, Hit@k and MRR per strategy.

Evidence Inference: one question per labelled prompt, "What is the effect of <I> compared with
<C> on <O>?"; gold windows are the windows of the prompt's article that contain an annotated
evidence span (compared after folding case, punctuation and whitespace; spans longer than 120
characters are matched on their first or last 120). PubMedQA: the question as asked; gold windows
are the windows of its source abstract.
R@k = |gold in top k| / |gold| (averaged over questions); Hit@k = share of questions with any
gold window in the top k; MRR = mean of 1 / rank of the first gold window in the returned list.
Each mean comes with a bootstrap 95% interval over the questions, and sr_rag is paired with every
other strategy question by question; the per-question values let `paired_against` compare two runs
(two builds of a lake, two taggers) on the same questions.

The learned fine scorer of an Evidence Inference lake is trained in that lake on (a seeded sample
of) the *train* split's questions and compared with the hand-set scorer on the validation split
(`ensure_reranker`); a PubMedQA lake, which has no training questions, borrows the Evidence
Inference model trained by the same code (a transfer test).
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from ebm_platform.benchmark.evidence_inference import labelled_prompts, question_text
from ebm_platform.benchmark.gold import fold, gold_for_spans
from ebm_platform.benchmark.sources import pubmedqa_path
from ebm_platform.evaluation.question_eval import ARMS_EXCHANGED, phrase
from ebm_platform.intervals import interval, paired_difference
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.retrieval.learned import LearnedReranker, reranker_path, train_and_validate
from ebm_platform.retrieval.med_r2 import med_r2
from ebm_platform.retrieval.med_r2 import oracle_utility as med_r2_oracle
from ebm_platform.retrieval.pipeline import Retrieval, Retriever
from ebm_platform.retrieval.reranker_data import candidate_rows
from ebm_platform.retrieval.strategies import retrieve
from ebm_platform.retrieval.verdict import SWAPPED


def windows_of(lake: Path) -> pl.DataFrame:
    files = LakeLayout(lake).asset_partitions("evidence_windows")
    if not files:
        raise FileNotFoundError(f"no evidence windows in {lake}")
    return pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed").unique("window_id", keep="first")


def benchmark_items(bench: pl.DataFrame, splits: pl.DataFrame, split: str) -> list[dict]:
    """The platform benchmark's questions of one split that carry gold windows (no condition filter,
    as `ebm ask` runs by default)."""
    chosen = splits.filter(pl.col("split") == split).select("question_id")
    rows = bench.join(chosen, on="question_id").filter(pl.col("gold_window_ids").list.len() > 0).sort("question_id")
    return [
        {"id": r["question_id"], "question": r["question"], "gold": set(r["gold_window_ids"]), "source": r["source"]}
        for r in rows.iter_rows(named=True)
    ]


def lake_benchmark(lake: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """benchmark_qa (every partition) and benchmark_splits of a production lake."""
    files = LakeLayout(lake).asset_partitions("benchmark_qa")
    splits = LakeLayout(lake).asset("benchmark_splits")
    if not files or not splits.is_file():
        raise FileNotFoundError(f"no benchmark_qa / benchmark_splits in {lake}: run `make demo` first")
    return pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed"), pl.read_parquet(splits)


def questions(
    benchmark: str, split: str, datasets_dir: Path, lake: Path, phrasing: str | None = None
) -> tuple[list[dict], Counter]:
    """Questions with their gold window ids, and the reasons any were dropped; Evidence Inference's
    in the benchmark's template, or in one of `question_eval`'s named phrasings."""
    if benchmark == "generated":
        bench, splits = lake_benchmark(lake)
        items = benchmark_items(bench, splits, split)
        in_split = splits.filter(pl.col("split") == split).height
        return items, Counter({"no gold window": in_split - len(items)} if in_split > len(items) else {})
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
            out.append(
                {
                    "id": f"ei-{row['prompt_id']}",
                    "gold": gold,
                    "label": SWAPPED.get(row["label"], row["label"]) if phrasing == ARMS_EXCHANGED else row["label"],
                    "question": phrase(row, phrasing) if phrasing else question_text(row),
                }
            )
    elif benchmark == "pubmedqa":
        if split not in ("validation", "all"):
            raise ValueError("PubMedQA here holds only the 500 non-test questions: use --split validation (or all)")
        records = json.loads(pubmedqa_path(datasets_dir).read_text(encoding="utf-8"))
        for pmid, record in records.items():
            gold = {w for w, _ in by_source.get(f"pubmedqa:{pmid}", [])}
            if not gold:
                dropped["abstract not in the evaluation corpus"] += 1
                continue
            out.append(
                {
                    "id": f"pubmedqa-{pmid}",
                    "gold": gold,
                    "question": record["QUESTION"],
                    "label": record["final_decision"],
                }
            )
    else:
        raise ValueError(f"unknown benchmark {benchmark!r}")
    return out, dropped


def question_metrics(ranked: list[str], gold: set[str], k: int = 10) -> tuple[float, float, float]:
    """R@k, Hit@k and reciprocal rank of one question's ranked window ids."""
    found = gold & set(ranked[:k])
    return len(found) / len(gold), float(bool(found)), next((1 / i for i, w in enumerate(ranked, 1) if w in gold), 0.0)


def question_table(rankings: list[list[str]], items: list[dict], k: int = 10) -> np.ndarray:
    """(questions, 3): `question_metrics` of each question's ranked window ids."""
    return np.array([question_metrics(ranked, item["gold"], k) for ranked, item in zip(rankings, items)]).reshape(-1, 3)


def ranked_metrics(rankings: list[list[str]], items: list[dict], k: int = 10) -> dict[str, float]:
    """R@k, Hit@k and MRR of one ranked window-id list per question (unrounded)."""
    return _means(question_table(rankings, items, k), k)


def _means(table: np.ndarray, k: int) -> dict[str, float]:
    means = table.mean(0) if len(table) else np.zeros(3)
    return dict(zip(metric_names(k), (float(m) for m in means)))


def metric_names(k: int) -> tuple[str, str, str]:
    """The names of `question_metrics`' three values, in order."""
    return f"R@{k}", f"Hit@{k}", "MRR"


def _retrieve(retriever: Retriever, item: dict, strategy: str, oracle_utility: bool) -> Retrieval:
    """One question; Med-R2 with the gold answer's f_u when `oracle_utility` (evaluation only)."""
    if oracle_utility and strategy == "med_r2":
        if retriever.verdict_model is None:
            raise ValueError("--oracle-utility needs the lake's verdict model (its proxy model)")
        return med_r2(retriever, item["question"], None, med_r2_oracle(retriever.verdict_model, item["label"]))
    return retrieve(retriever, item["question"], strategy)


def evaluate(
    retriever: Retriever,
    items: list[dict],
    strategies: list[str],
    k: int = 10,
    progress: Callable[[str], None] | None = None,
    oracle_utility: bool = False,
    reference: str = "sr_rag",
) -> tuple[dict[str, dict], dict[str, dict]]:
    """Per strategy, measured in one run: R@k, Hit@k, MRR with bootstrap 95% intervals over the
    questions, question count and time; and per question id its (R@k, Hit@k, reciprocal rank) per
    strategy, which `paired_against` compares between strategies or between runs."""
    results: dict[str, dict] = {}
    per_question: dict[str, dict] = {}
    for strategy in strategies:
        started = time.perf_counter()
        rankings = []
        for n, item in enumerate(items, 1):
            rankings.append([c.window_id for c in _retrieve(retriever, item, strategy, oracle_utility).candidates])
            if progress and n % 50 == 0:
                progress(f"{strategy}: {n}/{len(items)} questions")
        table = question_table(rankings, items, k)
        results[strategy] = {
            **{name: round(v, 4) for name, v in _means(table, k).items()},
            "interval_95": {
                name: [round(v, 4) for v in interval(table[:, m])] for m, name in enumerate(metric_names(k))
            },
            "questions": len(items),
            "seconds_per_question": round((time.perf_counter() - started) / max(len(items), 1), 3),
        }
        per_question[strategy] = {item["id"]: [round(float(v), 4) for v in row] for item, row in zip(items, table)}
    if reference in per_question:
        for strategy in per_question:
            if strategy != reference:
                results[strategy][f"{reference}_minus_this"] = paired_against(
                    per_question[reference], per_question[strategy], k
                )
    return results, per_question


def paired_against(first: dict[str, list[float]], second: dict[str, list[float]], k: int = 10) -> dict[str, dict]:
    """first minus second on the question ids both have, per metric: mean difference, paired
    bootstrap 95% interval, wins / ties / losses of first (two strategies of one run, or one
    strategy in two runs, e.g. two builds of a lake)."""
    shared = sorted(set(first) & set(second))
    a = np.array([first[q] for q in shared]).reshape(-1, 3)
    b = np.array([second[q] for q in shared]).reshape(-1, 3)
    return {name: paired_difference(a[:, m], b[:, m], digits=4) for m, name in enumerate(metric_names(k))}


ABLATED_FEATURES = ("maxsim", "section_", "doc_", "coverage_", "log_rank_graph", "hyde_cosine")
TRAIN_QUESTIONS = 600  # seeded sample of the 1,924 train prompts: ~0.7 s of candidate generation each


# what the learned scorer's candidates and features are computed by
RERANKER_CODE = (
    "features.py",
    "full_text.py",
    "fusion.py",
    "hyde.py",
    "learned.py",
    "lexical.py",
    "pipeline.py",
    "questions.py",
    "reranker_data.py",
    "rerank.py",
)


def retrieval_code_digest() -> str:
    """Hash of the retrieval code the learned scorer depends on, and of the code that words and orders
    its training questions: a model trained by other code is retrained (the seed strategies built on
    top of it, med_r2.py etc., do not enter)."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent
    for path in [
        *sorted(package / "retrieval" / name for name in RERANKER_CODE),
        package / "benchmark" / "evidence_inference.py",
    ]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def ensure_reranker(
    retriever: Retriever,
    benchmark: str,
    datasets_dir: Path,
    limit: int | None = None,
    progress: Callable[[str], None] = print,
) -> dict:
    """Train (or reuse) the lake's learned fine scorer and load it into `retriever`; returns its report."""
    limit = limit or TRAIN_QUESTIONS
    lake = retriever.lake
    folder = reranker_path(lake)
    code = retrieval_code_digest()
    if benchmark != "evidence-inference":
        source = _borrowed_reranker(lake, code)
        if source is None:  # a copy an earlier run borrowed is not this code's: it must not rank
            shutil.rmtree(folder, ignore_errors=True)
            retriever.reranker.learned = None
            progress("no Evidence Inference reranker trained by this code: the hand-set fine scorer ranks")
            return {"source": "none: hand-set scorer"}
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(source, folder)
        retriever.reranker.learned = LearnedReranker.load(folder)
        return {"source": f"borrowed from {source.parent.parent}", **retriever.reranker.learned.meta}
    key = f"{code}-{lake.name}-{limit}"
    existing = LearnedReranker.load(folder)
    if existing is not None and existing.meta.get("key") == key:
        progress(f"reusing the learned reranker {folder} ({key})")
        retriever.reranker.learned = existing
        return existing.meta
    train_items, _ = questions(benchmark, "train", datasets_dir, lake)
    random.Random(13).shuffle(train_items)
    train_items = train_items[:limit]
    validation_items, _ = questions(benchmark, "validation", datasets_dir, lake)
    progress(
        f"training the learned reranker on {len(train_items)} train questions "
        f"(validated on {len(validation_items)}) ..."
    )
    started = time.perf_counter()
    retriever.reranker.learned = None
    train = candidate_rows(retriever, train_items, "train", progress)
    validation = candidate_rows(retriever, validation_items, "validation", progress)
    model, report = train_and_validate(train, validation, key, ABLATED_FEATURES)
    model.meta.update(
        code=code,
        trained_on=f"{benchmark} train ({len(train_items)} questions)",
        seconds=round(time.perf_counter() - started, 1),
    )
    model.save(folder)
    retriever.reranker.learned = model
    return model.meta


def _borrowed_reranker(lake: Path, code: str) -> Path | None:
    """The newest Evidence Inference evaluation lake's reranker trained by this same code."""
    found = [
        p
        for p in lake.parent.glob("evidence-inference-*/models/reranker")
        if (m := LearnedReranker.load(p)) is not None and m.meta.get("code") == code
    ]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None
