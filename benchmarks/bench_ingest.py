"""Ingestion throughput on real JATS articles: parse -> grade/tag -> windows (offline grouping) ->
index encoding (one forward pass per window: vector, token embeddings, sentence vectors).

Same-run baselines: XML parsing alone, and raw `SentenceTransformer.encode` (torch, the vector
only, truncated at 256 word pieces) on the very texts the index encodes. Also reported: the
configured backend's cosine agreement with that torch reference on the same windows, and the
share of each stage in the end-to-end time (the ingest profile)."""

from __future__ import annotations

import time

import numpy as np
import polars as pl

from benchmarks.common import datasets_dir
from ebm_platform.conditions import load_catalogue
from ebm_platform.corpus.chunking import EMBED_TOKENS, BlockGrouper, window_documents
from ebm_platform.corpus.readers import read_jats
from ebm_platform.corpus.tagging import tag_conditions
from ebm_platform.corpus.windows import WindowParams
from ebm_platform.index.embeddings import get_encoder, load_embedder
from ebm_platform.index.window_index import encode_rows, index_text
from ebm_platform.llm.client import LLMClient
from ebm_platform.settings import DEFAULT_CATALOGUE, get_settings

N_DOCS = 40
AGREEMENT_WINDOWS = 1000


def run() -> None:
    settings = get_settings()
    paths = sorted((datasets_dir() / "evidence_inference" / "xml").glob("PMC*.nxml"))[:N_DOCS]
    catalogue = load_catalogue(DEFAULT_CATALOGUE)
    encoder = get_encoder(settings.embedding_model, settings.embedding_backend)  # start-up, not ingestion
    reference = load_embedder(settings.embedding_model)
    data = [p.read_bytes() for p in paths]

    stages: dict[str, float] = {}
    t0 = time.perf_counter()
    documents = [read_jats(d, str(p)) for d, p in zip(data, paths)]
    stages["parse"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    for doc in documents:
        doc.conditions = tag_conditions(catalogue, doc.title, doc.text[:4000], doc.text, doc.grade)
    stages["grade + tag"] = time.perf_counter() - t0

    grouper = BlockGrouper(WindowParams(), LLMClient(), lambda texts: encoder.embed(texts, max_tokens=EMBED_TOKENS))
    t0 = time.perf_counter()
    windows = window_documents([d.as_row() for d in documents], grouper)
    stages["windows (grouping embeddings + packing)"] = time.perf_counter() - t0

    frame = pl.DataFrame(windows).select("title", "section", "text")
    t0 = time.perf_counter()
    encode_rows(frame, encoder)
    stages["index encoding (one pass per window)"] = t_encode = time.perf_counter() - t0

    texts = [index_text(t, s, x)[0] for t, s, x in frame.iter_rows()]
    t0 = time.perf_counter()
    torch_vectors = reference.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    t_torch = time.perf_counter() - t0

    sample = texts[:AGREEMENT_WINDOWS]
    cosine = (encoder.embed(sample) * torch_vectors[: len(sample)]).sum(axis=1)

    total = sum(stages.values())
    mb = sum(len(d) for d in data) / 1e6
    print(
        f"documents: {len(documents)} JATS articles ({mb:.1f} MB), windows: {len(windows)}; "
        f"encoder {encoder.description}"
    )
    print(f"{'stage':<42}{'seconds':>9}{'share':>8}")
    for name, seconds in sorted(stages.items(), key=lambda kv: -kv[1]):
        print(f"{name:<42}{seconds:9.2f}{seconds / total:8.1%}")
    print(
        f"end to end {total:.2f} s: {len(documents) / total:.2f} docs/s, {len(windows) / total:.1f} windows/s "
        f"(parse alone, baseline: {len(documents) / stages['parse']:.0f} docs/s)"
    )
    print(
        f"windows embedded per second: index encoding {len(windows) / t_encode:.1f}/s "
        f"(vector + tokens + sentences, every word piece) vs raw SentenceTransformer.encode (torch) "
        f"{len(windows) / t_torch:.1f}/s (vector only, truncated at 256) = {t_torch / t_encode:.2f}x"
    )
    print(
        f"backend agreement with torch on {len(sample)} windows (same truncation): cosine mean "
        f"{cosine.mean():.5f}, min {cosine.min():.5f}, share >= 0.99: {np.mean(cosine >= 0.99):.1%}"
    )
