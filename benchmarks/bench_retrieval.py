"""Per-query latency of each strategy, offline, on the demo corpus (run `make demo` first), with
the time split by stage; `naive` is the baseline measured in the same run."""

from __future__ import annotations

import time

import numpy as np

from ebm_platform.conditions import active_catalogue
from ebm_platform.llm.client import LLMClient
from ebm_platform.retrieval.answer import compose_offline
from ebm_platform.retrieval.pipeline import Retriever
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
        retriever = Retriever(settings.lake, LLMClient(), settings.embedding_model, None, names,
                              embedding_backend=settings.embedding_backend)
    except FileNotFoundError as exc:
        raise SystemExit(f"{exc} (run `make demo` first)") from exc
    print(f"corpus: {retriever.index.count()} windows in {settings.lake}; {len(QUESTIONS)} questions x {ROUNDS} rounds")
    retriever.retrieve(QUESTIONS[0], "sr_rag")  # warm-up: model loads are start-up, not query time
    totals: dict[str, float] = {}
    for strategy in ("naive", "sr_rag"):
        latencies, stages = [], {"channels": [], "fusion": [], "rerank": [], "answer": []}
        for _ in range(ROUNDS):
            for question in QUESTIONS:
                started = time.perf_counter()
                result = retriever.retrieve(question, strategy)
                t0 = time.perf_counter()
                rows = retriever.attach_evidence([dict(c.row) for c in result.candidates])
                compose_offline(question, result.question_vector, result.anchors, rows, retriever._embed)
                stages["answer"].append(time.perf_counter() - t0)
                latencies.append(time.perf_counter() - started)
                for stage in ("channels", "fusion", "rerank"):
                    stages[stage].append(result.timings[stage])
        ms = np.array(latencies) * 1000
        totals[strategy] = float(np.median(ms))
        split = "  ".join(f"{k} {np.mean(v) * 1000:.0f} ms" for k, v in stages.items())
        print(f"{strategy:<7} p50 {np.percentile(ms, 50):7.0f} ms  p95 {np.percentile(ms, 95):7.0f} ms   mean by stage: {split}")
    print(f"sr_rag / naive median latency = {totals['sr_rag'] / totals['naive']:.1f}x")
