"""Per-query latency of each strategy, offline, on the demo corpus (run `make demo` first): the
retrieval plus the extractive answer, warm (model loads are start-up, not query time). Same-run
baselines: BM25 alone (the full-text channel's top 12, no answer) for `naive`, and `naive` for
`sr_rag`. The query profile lists each stage's share of the time."""

from __future__ import annotations

import time

import numpy as np

from ebm_platform.conditions import active_catalogue
from ebm_platform.llm.client import LLMClient
from ebm_platform.retrieval.answer import compose_offline
from ebm_platform.retrieval.pipeline import Retriever
from ebm_platform.retrieval.strategies import retrieve
from ebm_platform.settings import get_settings

QUESTIONS = [
    "In adults with patellofemoral pain, does adding hip strengthening to knee exercise reduce pain more than knee exercise alone?",
    "Does motor control exercise reduce disability compared with general exercise in chronic low back pain?",
    "Is eccentric loading effective for Achilles tendinopathy pain at 12 weeks?",
    "Does manual therapy improve neck pain and disability compared with exercise alone?",
    "What is the effect of neuromuscular training on re-injury after anterior cruciate ligament reconstruction?",
    "Do corticosteroid injections reduce shoulder pain in rotator cuff related shoulder pain compared with physiotherapy?",
    "Does arthroscopic partial meniscectomy improve function compared with exercise therapy in meniscal tears?",
    "Are foot orthoses effective for plantar heel pain compared with sham insoles?",
    "Does Nordic hamstring exercise prevent hamstring strain injury in football players?",
    "What exercise dose improves pain in knee osteoarthritis?",
    "Does yoga reduce low back pain intensity compared with usual care?",
    "Is early mobilisation better than immobilisation after lateral ankle sprain?",
    "Does shockwave therapy reduce pain in lateral elbow tendinopathy?",
    "Which outcome measures assess function after hip arthroscopy for femoroacetabular impingement?",
    "Does cognitive behavioural therapy add benefit to exercise for chronic low back pain?",
    "Do adverse events occur with spinal manipulation for neck pain?",
]
ROUNDS = 2


def run() -> None:
    settings = get_settings()
    names = tuple(c.name.lower() for c in active_catalogue().conditions)
    try:
        retriever = Retriever(
            settings.lake,
            LLMClient(),
            settings.embedding_model,
            None,
            names,
            embedding_backend=settings.embedding_backend,
        )
    except FileNotFoundError as exc:
        raise SystemExit(f"{exc} (run `make demo` first)") from exc
    print(
        f"corpus: {retriever.index.count()} windows in {settings.lake}; {len(QUESTIONS)} questions x {ROUNDS} rounds; "
        f"encoder {retriever.encoder.description}"
    )
    for question in QUESTIONS[:2]:  # warm-up: model loads and first reads are start-up, not query time
        retrieve(retriever, question, "sr_rag")
    bm25 = []
    for _ in range(ROUNDS):
        for question in QUESTIONS:
            started = time.perf_counter()
            retriever.text_channel.search(question, retriever.params.budget)
            bm25.append(time.perf_counter() - started)
    medians = {"bm25": float(np.median(bm25))}
    print(
        f"{'bm25':<7} p50 {np.percentile(bm25, 50) * 1000:7.0f} ms  p95 {np.percentile(bm25, 95) * 1000:7.0f} ms"
        f"   (baseline: the full-text channel alone, top {retriever.params.budget}, no answer)"
    )
    for strategy in ("naive", "sr_rag"):
        latencies: list[float] = []
        stages: dict[str, list[float]] = {}
        for _ in range(ROUNDS):
            for question in QUESTIONS:
                started = time.perf_counter()
                result = retrieve(retriever, question, strategy)
                t0 = time.perf_counter()
                rows = retriever.attach_evidence([dict(c.row) for c in result.candidates])
                compose_offline(question, result.question_vector, result.anchors, rows, retriever._embed)
                latencies.append(time.perf_counter() - started)
                for stage, seconds in {**result.timings, "answer": time.perf_counter() - t0}.items():
                    stages.setdefault(stage, []).append(seconds)
        ms = np.array(latencies) * 1000
        medians[strategy] = float(np.median(latencies))
        total = sum(np.mean(v) for v in stages.values())
        profile = "  ".join(
            f"{k} {np.mean(v) * 1000:.0f} ms ({np.mean(v) / total:.0%})"
            for k, v in sorted(stages.items(), key=lambda kv: -np.mean(kv[1]))
        )
        print(
            f"{strategy:<7} p50 {np.percentile(ms, 50):7.0f} ms  p95 {np.percentile(ms, 95):7.0f} ms   profile: {profile}"
        )
    print(
        f"median latency: naive / bm25 = {medians['naive'] / medians['bm25']:.1f}x, "
        f"sr_rag / naive = {medians['sr_rag'] / medians['naive']:.1f}x"
    )
