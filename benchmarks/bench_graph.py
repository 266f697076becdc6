"""Graph store: the SR-RAG release edges (371,226) in Kùzu vs a NetworkX MultiDiGraph (the
paper's stack), both timed in this run; 2-hop neighbourhood latency on both; and the offline
PICO extraction quality against Evidence Inference's doctor-written prompts."""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

import kuzu

from benchmarks.common import datasets_dir, percentiles
from ebm_platform.evaluation.pico_eval import evaluate
from ebm_platform.graph.release import load_into_kuzu, load_into_networkx, read_edges, two_hop_kuzu, two_hop_networkx

QUERIES = 200


def run() -> None:
    path = datasets_dir() / "sr_rag_release" / "knowledge-graph" / "edges.jsonl.gz"
    t0 = time.perf_counter()
    edges = read_edges(path)
    t_read = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        counts = load_into_kuzu(edges, Path(tmp) / "release.kz")
        t_kuzu = time.perf_counter() - t0
        t0 = time.perf_counter()
        graph = load_into_networkx(edges)
        t_nx = time.perf_counter() - t0
        print(f"edges {counts['edges']}, nodes {counts['nodes']} (read {t_read:.2f}s)")
        print(f"load  Kùzu {t_kuzu:6.2f} s   NetworkX {t_nx:6.2f} s   NetworkX/Kùzu = {t_nx / t_kuzu:.1f}x")
        sources = sorted({s for s in edges["source"].to_list()})
        random.Random(13).shuffle(sources)
        sample = sources[:QUERIES]
        db = kuzu.Database(str(Path(tmp) / "release.kz"), read_only=True)
        conn = kuzu.Connection(db)
        two_hop_kuzu(conn, sample[0])  # warm-up
        k_times, n_times, mismatches = [], [], 0
        for node in sample:
            t0 = time.perf_counter()
            k = two_hop_kuzu(conn, node)
            k_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            n = two_hop_networkx(graph, node)
            n_times.append(time.perf_counter() - t0)
            mismatches += k != n
        print(f"2-hop Kùzu     {percentiles(k_times)}")
        print(f"2-hop NetworkX {percentiles(n_times)}")
        print(f"2-hop answers identical on {QUERIES - mismatches}/{QUERIES} start nodes")
        conn.close()
        db.close()
    result = evaluate(datasets_dir(), "validation")
    print(
        f"PICO extraction (offline rules) vs Evidence Inference validation prompts "
        f"({result['prompts']} prompts, {result['articles']} articles):"
    )
    for field, m in result["fields"].items():
        print(
            f"  {field:<13} P {m['precision']:.3f}  R {m['recall']:.3f}  F1 {m['f1']:.3f}  "
            f"F1>=0.5 on {m['match_rate_f1_ge_0.5']:.1%}"
        )
