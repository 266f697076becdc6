"""Graph channel (SR-RAG 3.4 / App. D.1): from a question's PICO anchors to candidate windows.

1. Entity matching: each anchor (P, I, C, O, T, condition) matches entities by normalised name
   (containment) and by embedding cosine (>= min_similarity, top `per_anchor`).
2. Triple matching: typed relations whose two ends both matched add a bonus to the window the
   triple came from.
3. Community filtering: windows whose matched entities sit in the question's best communities
   (by matched score) keep full weight; others are down-weighted by `off_community`.
Each window's score sums its matched entities' scores; the path names what led to it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from ebm_platform.graph.build import entity_matrix
from ebm_platform.graph.normalise import normalise
from ebm_platform.graph.store import GraphStore
from ebm_platform.lake_files import Location, parquet_files, read_table, stem
from ebm_platform.versions import mismatched, read_consistent, table_version
from ebm_platform.vocabulary import Anchors


def open_graph(graph_path: Path, entity_dir: Location, wait_s: float) -> tuple[GraphStore, pl.DataFrame] | None:
    """The read-only store and every partition's entity table (knowledge_graph's parquet), written
    by the same runs (waits up to `wait_s` for a writer between its two commits; StoreBusyError
    after). None when the lake has no graph yet."""
    if not graph_path.exists() or not parquet_files(entity_dir):
        return None

    def read() -> tuple[tuple[GraphStore, list], list[str]]:
        store = GraphStore(graph_path, read_only=True)
        tables = {stem(p): read_table(p) for p in parquet_files(entity_dir)}
        stale = mismatched(store.versions(), {code: table_version(t) for code, t in tables.items()})
        if stale:
            store.close()
        return (store, list(tables.values())), [
            f"partition {code}: graph and entity table from different runs" for code in stale
        ]

    store, tables = read_consistent(read, "knowledge_graph", wait_s)
    return store, pl.concat([pl.from_arrow(t) for t in tables], how="diagonal_relaxed")


@dataclass
class GraphCandidate:
    window_id: str
    score: float
    path: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ChannelParams:
    capacity: int = 120
    per_anchor: int = 8
    min_similarity: float = 0.6
    triple_bonus: float = 0.5
    top_communities: int = 3
    off_community: float = 0.5


class GraphChannel:
    """Candidate windows from the Kùzu graph for one or all partitions."""

    def __init__(
        self,
        store: GraphStore,
        entities: pl.DataFrame,
        embed: Callable[[list[str]], np.ndarray],
        params: ChannelParams = ChannelParams(),
    ) -> None:
        self.store, self.embed, self.params = store, embed, params
        # an entity is one global node listed by every partition that mentions it: one row each here
        entities = (
            entities.group_by("id", maintain_order=True).agg(
                pl.col("partition"), *(pl.col(c).first() for c in ("name", "norm", "type", "vector"))
            )
            if entities.height
            else entities.with_columns(pl.col("partition").cast(pl.List(pl.String)))
        )
        self.entities = entities.select("id", "partition", "name", "norm", "type")
        # read per question: kept as lists once (converting them each time cost about a tenth of an ask)
        self.ids, self.names, self.norms, self.types = (
            self.entities[c].to_list() for c in ("id", "name", "norm", "type")
        )
        self.vectors = entity_matrix(entities) if entities.height else np.zeros((0, 384), dtype=np.float32)
        # The links every question follows, read from the store once (four Kùzu queries cost a question about
        # 30 ms on the demo lake; these filters well under 1 ms): each (entity, window) mention with the
        # window's partition, the typed relations and each entity's community.
        self.mentions = store.query(
            "MATCH (e:Entity)-[:MENTIONED_IN]->(w:Window) "
            "RETURN e.id AS entity, w.window_id AS window_id, w.partition AS partition, e.type AS type, e.name AS name"
        ).sort("entity", "window_id", "partition")  # sorted here: polars sorts in a tenth of Kùzu's time
        self.relations = store.query(
            "MATCH (a:Entity)-[r:RELATES]->(b:Entity) RETURN a.id AS a_id, b.id AS b_id, a.name AS source, r.type AS type, "
            "b.name AS target, r.window_id AS window_id"
        ).sort("a_id", "b_id", "type", "window_id")
        # in the entities' order, which breaks ties between equally weighted communities (not the store's order:
        # entities are stored as the partitions' runs commit, so it changed from one build to the next)
        communities = store.query(
            "MATCH (e:Entity)-[:IN_COMMUNITY]->(c:Community) RETURN e.id AS entity, c.id AS community"
        ).sort("entity", "community")
        self.community_of: dict[str, tuple[int, str]] = {
            entity: (rank, community) for rank, (entity, community) in enumerate(communities.iter_rows())
        }

    def _match(self, anchors: Anchors, partitions: list[str] | None) -> dict[str, tuple[float, str]]:
        """entity id -> (score, 'anchor -> entity' description), best per entity."""
        texts = [t for t in anchors.terms if t]
        if not texts or not self.entities.height:
            return {}
        mask = (
            np.ones(self.entities.height, dtype=bool)
            if not partitions
            else self.entities["partition"].list.eval(pl.element().is_in(partitions)).list.any().to_numpy()
        )
        ids, names, norms, types = self.ids, self.names, self.norms, self.types
        sims = self.embed(texts) @ self.vectors.T
        matched: dict[str, tuple[float, str]] = {}
        for a, text in enumerate(texts):
            anchor_norm = normalise(text)
            scores = np.where(mask, sims[a], -1.0)
            for i in np.argsort(-scores)[: self.params.per_anchor * 4]:
                exact = norms[i] and (norms[i] in anchor_norm or anchor_norm in norms[i]) and len(norms[i]) > 2
                score = 1.0 if exact else float(scores[i])
                if score < self.params.min_similarity:
                    continue
                if score > matched.get(ids[i], (0.0, ""))[0]:
                    matched[ids[i]] = (score, f"anchor '{text}' -> {types[i]} '{names[i]}' ({score:.2f})")
        return dict(sorted(matched.items(), key=lambda kv: -kv[1][0])[: self.params.per_anchor * len(texts)])

    def window_entities(self, window_ids: list[str]) -> dict[str, list[dict]]:
        """window_id -> the entities the graph records as mentioned in it ({type, name}), in a
        stable order: what the lake's extraction (the learned tagger's P/I/C/O with the rules, or
        the LLM) found in each window."""
        if not window_ids:
            return {}
        found = (
            self.mentions.filter(pl.col("window_id").is_in(list(window_ids)))
            .select("window_id", "type", "name")
            .unique()
            .sort("window_id", "type", "name")
        )
        out: dict[str, list[dict]] = {}
        for row in found.iter_rows(named=True):
            out.setdefault(row["window_id"], []).append({"type": row["type"], "name": row["name"]})
        return out

    def search(self, anchors: Anchors, partitions: list[str] | None = None) -> list[GraphCandidate]:
        matched = self._match(anchors, partitions)
        if not matched:
            return []
        ids = list(matched)
        mentions = self.mentions.filter(pl.col("entity").is_in(ids))
        if partitions:  # a global entity's other conditions stay out
            mentions = mentions.filter(pl.col("partition").is_in(list(partitions)))
        mentions = mentions.select("entity", "window_id").unique(maintain_order=True)
        triples = self.relations.filter(pl.col("a_id").is_in(ids) & pl.col("b_id").is_in(ids)).select(
            "source", "type", "target", "window_id"
        )
        community_of = {e: c for (_, c), e in sorted((self.community_of[e], e) for e in ids if e in self.community_of)}
        weight: dict[str, float] = defaultdict(float)
        for entity, community in community_of.items():
            weight[community] += matched[entity][0]
        best = set(sorted(weight, key=lambda c: -weight[c])[: self.params.top_communities])
        scores: dict[str, float] = defaultdict(float)
        paths: dict[str, list[str]] = defaultdict(list)
        for entity, window in mentions.iter_rows():
            factor = 1.0 if not best or community_of.get(entity) in best else self.params.off_community
            scores[window] += matched[entity][0] * factor
            paths[window].append(matched[entity][1] + ("" if factor == 1.0 else " [outside top communities]"))
        for source, type_, target, window in triples.iter_rows():
            if window in scores:
                scores[window] += self.params.triple_bonus
                paths[window].append(f"triple ({source}) -[{type_}]-> ({target})")
        ranked = sorted(scores, key=lambda w: (-scores[w], w))[: self.params.capacity]
        return [GraphCandidate(w, round(scores[w], 4), paths[w]) for w in ranked]
