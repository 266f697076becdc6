"""The project's full-text channel (bm25s over `search_text` = title + section + window text, saved in
the lake per index version: retrieval/full_text.py) against bm25s built in this run over the same
windows (window text alone, what the channel indexed two versions ago, and title + section + text)
and against LanceDB's native BM25 over `search_text` (English stemming and stop words; the channel
before), on Evidence Inference validation questions. Run on the newest all-article Evidence
Inference evaluation lake (`ebm eval retrieval --benchmark evidence-inference` builds it)."""

from __future__ import annotations

import time
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

from ebm_platform.evaluation.lakes import MARKER
from ebm_platform.evaluation.retrieval_eval import questions, ranked_metrics
from ebm_platform.index.window_index import SEARCH_TEXT, WindowIndex
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.retrieval.full_text import FullTextChannel
from ebm_platform.settings import get_settings

K = 10


def _lake() -> Path | None:
    lakes = [
        p
        for p in LakeLayout(get_settings().lake).eval_lakes.glob("evidence-inference-*")
        if (p / MARKER).is_file() and not (p / "corpus_ids.txt").exists()
    ]
    return max(lakes, key=lambda p: (p / MARKER).stat().st_mtime) if lakes else None


def run() -> None:
    lake = _lake()
    if lake is None:
        print(
            "no all-article Evidence Inference evaluation lake: run `ebm eval retrieval --benchmark "
            "evidence-inference` first"
        )
        return
    settings = get_settings()
    items, _ = questions("evidence-inference", "validation", Path(settings.require_datasets_dir()), lake)
    index = WindowIndex(LakeLayout(lake).lancedb, pinned=True)
    table = index.table()
    columns = table.search().select(["window_id", "text", SEARCH_TEXT]).limit(table.count_rows()).to_arrow()
    ids = columns["window_id"].to_pylist()
    stemmer = Stemmer.Stemmer("english")
    texts = [q["question"] for q in items]
    rows = {}
    for name, field in (("bm25s, window text only", "text"), ("bm25s, title + section + text", SEARCH_TEXT)):
        started = time.perf_counter()
        retriever = bm25s.BM25()
        retriever.index(
            bm25s.tokenize(columns[field].to_pylist(), stopwords="en", stemmer=stemmer, show_progress=False),
            show_progress=False,
        )
        built = time.perf_counter() - started
        started = time.perf_counter()
        found, _ = retriever.retrieve(
            bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), k=K * 3, show_progress=False
        )
        per_query = (time.perf_counter() - started) / max(len(items), 1)
        rows[name] = {
            **ranked_metrics([[ids[i] for i in row] for row in np.asarray(found)], items),
            "index_s": built,
            "ms_per_query": per_query * 1000,
        }
    started = time.perf_counter()
    channel = FullTextChannel.open(index, LakeLayout(lake).bm25s)
    opened = time.perf_counter() - started
    for name, search, index_s in (
        ("the channel: bm25s saved in the lake", channel.search, opened),
        ("LanceDB FTS over search_text (the channel before)", index.full_text, float("nan")),
    ):
        started = time.perf_counter()
        ranked = [search(q, K * 3)["window_id"].to_list() for q in texts]
        rows[name] = {
            **ranked_metrics(ranked, items),
            "index_s": index_s,
            "ms_per_query": (time.perf_counter() - started) / max(len(items), 1) * 1000,
        }
    print(f"{lake.name}: {len(ids)} windows, {len(items)} validation questions (Evidence Inference), k = {K}")
    print(f"{'ranking':<52}{'R@10':>7}{'Hit@10':>8}{'MRR':>7}{'index s':>9}{'ms/query':>10}")
    for name, m in rows.items():
        print(
            f"{name:<52}{m['R@10']:>7.3f}{m['Hit@10']:>8.3f}{m['MRR']:>7.3f}{m['index_s']:>9.1f}{m['ms_per_query']:>10.1f}"
        )
