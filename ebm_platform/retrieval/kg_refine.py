"""Iterative KG refinement (seeds/kg-refine.txt; methods.md section 5), over the lake's Kùzu graph.

1. Seeds: the SEED_ENTITIES entities best matching the question's PICO terms (the graph channel's
   name and embedding match; the question itself when it states no anchor), and the seeds' top
   SEED_RELATIONS triples by the scorer: the first subgraph.
2. Expansion: 1-hop then 2-hop triples touching the subgraph's entities, keeping the top
   EXPAND_TOP new triples per hop by the scorer (embedding similarity of the triple read as text,
   "X relation Y", with the question; ablation `no_scorer`: the first in the store's order).
   A hop's candidates are first cut to HOP_CANDIDATES by IDF term coverage.
3. Pruning: keep-probability = a triple's similarity relative to the best triple's; a triple
   under KEEP_THRESHOLD is removed, weakest first, unless its removal splits the subgraph into
   more components (ablation `no_pruner`: nothing is pruned).
4. Read-out: a DFS outline from the best seed ("1. X" / "1.1 (relation) Y"); ablation `plain`:
   one "X relation Y." sentence per triple.
5. Iterate up to MAX_ROUNDS, adding the next seed entity, while the kept triples' provenance holds
   fewer windows than the evidence budget (LLM mode: also until the model says the outline suffices).
Ranked windows = the provenance windows of the kept triples, best triple first.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from ebm_platform.llm.prompts import fill
from ebm_platform.retrieval.pipeline import Candidate, Laps, Retrieval, Retriever, collect
from ebm_platform.retrieval.questions import question_anchors

SEED_ENTITIES = 5
SEED_RELATIONS = 5
EXPAND_TOP = 5
KEEP_THRESHOLD = 0.5
MAX_ROUNDS = 5
HOP_CANDIDATES = 300
KG_REFINE_ABLATIONS = {"no_scorer": {"scorer": False}, "no_pruner": {"pruner": False}, "plain": {"outline": False}}


@dataclass
class Triple:
    source_id: str
    source: str
    relation: str
    target_id: str
    target: str
    window_id: str
    similarity: float = 0.0

    @property
    def text(self) -> str:
        return f"{self.source} {self.relation.replace('_', ' ')} {self.target}"

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.source_id, self.relation, self.target_id, self.window_id


def keep_probabilities(similarities: list[float]) -> list[float]:
    """Each triple's similarity relative to the best triple's (clipped to [0, 1])."""
    best = max(similarities, default=0.0)
    return [min(max(s / best, 0.0), 1.0) if best > 0 else 1.0 for s in similarities]


def _components(edges: list[tuple[str, str]]) -> int:
    graph = nx.MultiGraph()
    graph.add_edges_from(edges)
    return nx.number_connected_components(graph)


def prune(
    edges: list[tuple[str, str]], probabilities: list[float], threshold: float = KEEP_THRESHOLD
) -> tuple[list[int], list[int]]:
    """Remove edges with keep-probability < threshold, weakest first, unless the removal leaves the
    subgraph in more connected components (a leaf edge may go: its end node leaves with it).
    Returns (kept, pruned) edge indices."""
    alive = set(range(len(edges)))
    pruned = []
    for i in sorted((i for i, p in enumerate(probabilities) if p < threshold), key=lambda i: (probabilities[i], i)):
        before = _components([edges[j] for j in alive])
        if _components([edges[j] for j in alive - {i}]) <= before:
            alive.discard(i)
            pruned.append(i)
    return sorted(alive), pruned


def dfs_outline(triples: list[Triple], roots: list[str]) -> list[str]:
    """The subgraph as a numbered outline: each root entity, then a DFS of its neighbours
    ("1. X", "1.1 (relation) Y", "1.1.1 (relation) Z"); a component without a root starts from its first triple."""
    adjacency: dict[str, list[tuple[str, str, str]]] = {}
    names = {}
    for t in triples:
        names[t.source_id], names[t.target_id] = t.source, t.target
        adjacency.setdefault(t.source_id, []).append((t.relation, t.target_id, "->"))
        adjacency.setdefault(t.target_id, []).append((t.relation, t.source_id, "<-"))
    lines: list[str] = []
    seen: set[str] = set()

    def visit(node: str, number: str) -> None:
        seen.add(node)
        child = 0
        for relation, other, arrow in adjacency.get(node, []):
            if other in seen:
                continue
            child += 1
            label = f"({relation})" if arrow == "->" else f"(is {relation} of)"
            lines.append(f"{number}.{child} {label} {names[other]}")
            visit(other, f"{number}.{child}")

    starts = [r for r in roots if r in adjacency] + [t.source_id for t in triples]
    top = 0
    for start in starts:
        if start in seen:
            continue
        top += 1
        lines.append(f"{top}. {names[start]}")
        visit(start, str(top))
    return lines


def plain_readout(triples: list[Triple]) -> list[str]:
    return [f"{t.text}." for t in triples]


SUFFICIENT_PROMPT = """Question: {question}
Knowledge subgraph:
{outline}
Does this subgraph contain what is needed to answer the question? JSON only: {{"sufficient": true|false}}"""


class KGRefiner:
    """One question's refinement over the lake's graph."""

    def __init__(
        self, r: Retriever, question: str, qvec: np.ndarray, conditions: list[str] | None, scorer: bool = True
    ) -> None:
        self.r, self.question, self.qvec, self.conditions, self.scorer = r, question, qvec, conditions, scorer
        self.similarity: dict[str, float] = {}  # triple text -> cosine with the question (kept across rounds)

    def seeds(self, anchors) -> list[tuple[str, str]]:
        """(entity id, how it matched), best first: up to SEED_ENTITIES + MAX_ROUNDS - 1 of them."""
        graph = self.r.graph
        wanted = SEED_ENTITIES + MAX_ROUNDS - 1
        matched = graph._match(anchors, self.conditions)  # the graph channel's own entity match
        found = [(eid, why) for eid, (_, why) in matched.items()][:wanted]
        if len(found) < wanted:
            sims = graph.vectors @ self.qvec
            ids = graph.entities["id"].to_list()
            for i in np.argsort(-sims)[: wanted * 2]:
                if ids[i] not in dict(found):
                    found.append((ids[i], f"question ~ '{graph.entities['name'][int(i)]}' ({sims[i]:.2f})"))
        return found[:wanted]

    def touching(self, entity_ids: list[str]) -> list[Triple]:
        scope = " AND r.partition IN $parts" if self.conditions else ""
        frame = self.r.graph.store.query(
            "MATCH (a:Entity)-[r:RELATES]->(b:Entity) WHERE (a.id IN $ids OR b.id IN $ids)"
            + scope
            + " RETURN a.id, a.name, r.type, b.id, b.name, r.window_id ORDER BY r.window_id, a.id, b.id, r.type LIMIT 5000",
            {"ids": entity_ids, **({"parts": list(self.conditions)} if self.conditions else {})},
        )
        return [Triple(*row) for row in frame.iter_rows()]

    def best(self, candidates: list[Triple], have: set, n: int) -> list[Triple]:
        """The top `n` new triples by the scorer (or the store's order without it)."""
        fresh = list({t.key: t for t in candidates if t.key not in have}.values())
        if not fresh:
            return []
        stats = self.r.term_statistics
        fresh = sorted(fresh, key=lambda t: -stats.coverage(self.question, t.text))[:HOP_CANDIDATES]
        todo = list(dict.fromkeys(t.text for t in fresh if t.text not in self.similarity))
        if todo:
            self.similarity.update(zip(todo, (self.r._embed_short(todo) @ self.qvec).tolist()))
        for t in fresh:
            t.similarity = self.similarity[t.text]
        ordered = sorted(fresh, key=lambda t: -t.similarity) if self.scorer else fresh
        return ordered[:n]

    def subgraph(self, seed_ids: list[str]) -> list[Triple]:
        """Seed triples, then 1-hop and 2-hop expansions."""
        triples = self.best(self.touching(seed_ids), set(), SEED_RELATIONS)
        for _ in range(2):
            entities = sorted({e for t in triples for e in (t.source_id, t.target_id)})
            triples += self.best(self.touching(entities), {t.key for t in triples}, EXPAND_TOP)
        return triples


def kg_refine_strategy(name: str, scorer: bool = True, pruner: bool = True, outline: bool = True):
    """KG refinement, or one of its ablations."""

    def run(r: Retriever, question: str, conditions: list[str] | None) -> Retrieval:
        laps = Laps()
        anchors = question_anchors(question, r.condition_names)
        qvec = r._embed([question])[0]
        notes = {
            "fine_scorer": "triples by embedding similarity with the question"
            if scorer
            else "no scorer (ablation): triples in the store's order",
            "betr": "not applied",
            "pruner": "on" if pruner else "off (ablation)",
            "readout": "DFS outline" if outline else "plain text (ablation)",
        }
        if r.graph is None:
            return Retrieval(
                question,
                name,
                qvec,
                anchors,
                [],
                [],
                laps.timings,
                {**notes, "graph": "no knowledge graph in this lake"},
            )
        refiner = KGRefiner(r, question, qvec, conditions, scorer)
        seeds = refiner.seeds(anchors)
        laps.lap("seeds")
        rounds, kept, pruned, triples, keep_p = 0, [], [], [], []
        for rounds in range(1, MAX_ROUNDS + 1):
            triples = refiner.subgraph([eid for eid, _ in seeds[: SEED_ENTITIES + rounds - 1]])
            edges = [(t.source_id, t.target_id) for t in triples]
            keep_p = keep_probabilities([t.similarity for t in triples])
            kept, pruned = prune(edges, keep_p) if pruner else (list(range(len(triples))), [])
            windows = {triples[i].window_id for i in kept}
            readout = (
                dfs_outline([triples[i] for i in kept], [eid for eid, _ in seeds])
                if outline
                else plain_readout([triples[i] for i in kept])
            )
            if len(windows) >= r.params.budget:
                break
            if (
                not r.client.offline
                and r.client.complete_json(
                    "kg_refine_sufficient",
                    fill(SUFFICIENT_PROMPT, {"outline": "\n".join(readout)}, question=question),
                    {"type": "object", "properties": {"sufficient": {"type": "boolean"}}, "required": ["sufficient"]},
                    offline=lambda: {"sufficient": False},
                ).data["sufficient"]
            ):
                break
        laps.lap("expand and prune")
        order = sorted(kept, key=lambda i: -triples[i].similarity)
        rows: dict[str, dict] = {}
        ids = list(dict.fromkeys(triples[i].window_id for i in order))
        collect(r.index.rows_for_windows(ids, conditions), rows)
        candidates: dict[str, Candidate] = {}
        for i in order:
            t = triples[i]
            if t.window_id in rows:
                c = candidates.setdefault(t.window_id, Candidate(t.window_id, rows[t.window_id], final=t.similarity))
                c.scores.setdefault("triples", []).append(
                    f"({t.source}) -[{t.relation}]-> ({t.target}) sim {t.similarity:.3f}"
                )
        chosen = list(candidates.values())
        laps.lap("read windows")
        return Retrieval(
            question,
            name,
            qvec,
            anchors,
            chosen[: r.params.budget],
            chosen,
            laps.timings,
            {**notes, "rounds": str(rounds), "subgraph": f"{len(kept)} triples kept, {len(pruned)} pruned"},
            details={
                "seeds": [why for _, why in seeds[: SEED_ENTITIES + rounds - 1]],
                "kept": [triples[i].text for i in order],
                "pruned": [f"{triples[i].text} (keep-p {keep_p[i]:.2f})" for i in pruned],
                "readout": readout,
            },
        )

    return run
