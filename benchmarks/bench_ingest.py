"""Ingestion throughput: parse -> grade/tag -> window (offline grouping) on real JATS articles.

Baseline, measured in the same run: XML parsing alone. Reported: documents/s, windows/s, and
the share of the time spent outside parsing (tagging, block split, embedding-based grouping,
window packing)."""

from __future__ import annotations

import time

from benchmarks.common import datasets_dir
from ebm_platform.conditions import load_catalogue
from ebm_platform.corpus.chunking import EMBED_TOKENS, BlockGrouper, window_documents
from ebm_platform.corpus.readers import read_jats
from ebm_platform.corpus.tagging import tag_conditions
from ebm_platform.corpus.windows import WindowParams
from ebm_platform.index.embeddings import embed, load_embedder
from ebm_platform.llm.client import LLMClient
from ebm_platform.settings import DEFAULT_CATALOGUE

N_DOCS = 40


def run() -> None:
    paths = sorted((datasets_dir() / "evidence_inference" / "xml").glob("PMC*.nxml"))[:N_DOCS]
    catalogue = load_catalogue(DEFAULT_CATALOGUE)
    load_embedder()  # model load is start-up cost, not ingestion
    data = [p.read_bytes() for p in paths]

    t0 = time.perf_counter()
    documents = [read_jats(d, str(p)) for d, p in zip(data, paths)]
    t_parse = time.perf_counter() - t0

    t0 = time.perf_counter()
    for doc in documents:
        doc.conditions = tag_conditions(catalogue, doc.title, doc.text[:4000], doc.text, doc.grade)
    t_tag = time.perf_counter() - t0

    grouper = BlockGrouper(WindowParams(), LLMClient(), lambda texts: embed(texts, max_tokens=EMBED_TOKENS))
    t0 = time.perf_counter()
    windows = window_documents([d.as_row() for d in documents], grouper)
    t_window = time.perf_counter() - t0

    total = t_parse + t_tag + t_window
    mb = sum(len(d) for d in data) / 1e6
    print(f"documents: {len(documents)} JATS articles ({mb:.1f} MB), windows: {len(windows)}")
    print(f"parse (baseline)   {t_parse:7.2f} s  {len(documents) / t_parse:8.1f} docs/s")
    print(f"grade + tag        {t_tag:7.2f} s")
    print(f"window (offline)   {t_window:7.2f} s  {len(windows) / t_window:8.1f} windows/s")
    print(f"end to end         {total:7.2f} s  {len(documents) / total:8.2f} docs/s  {len(windows) / total:8.1f} windows/s")
    print(f"share of time outside parsing: {(total - t_parse) / total:.1%} "
          f"(end-to-end / parse-only = {total / t_parse:.1f}x)")
