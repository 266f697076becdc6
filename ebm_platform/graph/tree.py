"""Knowledge tree (Youtu-GraphRAG style, SR-RAG App. C.2): community compression, 4 layers.

1. Seed communities with Louvain (seeded) over the entity graph (typed relations weigh 2,
   co-mention in a window 1).
2. Node reassignment: phi(e, C) = Jaccard(Psi(e), Psi(C)) + lambda * cos(v_e, centroid(C)),
   Psi = set of relation types an entity (community) takes part in; a node moves to a
   neighbouring community when that raises phi by more than epsilon.
3. Community merging: adjacent communities merge while phi(Ca, Cb) >= threshold (same formula
   over the communities' relation sets and centroids) and the result stays under max_size.
   Reassignment passes repeat until one moves no node (at most `max_passes`).
Layers: L4 community, L3 keywords (members of highest salience: inside weight x share of weight
inside), L2 triples (typed relations among members), L1 attributes (of members); each community
records its L2 and L1 counts and a summary (extractive from the graph offline, the LLM when set).
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import igraph
import numpy as np
import polars as pl
import scipy.sparse as sp

from ebm_platform.graph.build import VectorBatches
from ebm_platform.llm.prompts import fill
from ebm_platform.vectors import unit_rows


@dataclass(frozen=True)
class TreeParams:
    lam: float = 0.5
    epsilon: float = 0.05
    merge_threshold: float = 1.1
    max_size: int = 200
    keywords: int = 3
    seed: int = 7
    max_passes: int = 20


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


# igraph converts an edge list through Python objects (about 170 bytes an edge while it does: 246 MiB for the
# whole Evidence Inference lake's 1.4 million edges at once); added this many at a time, the conversion is bounded
EDGE_BATCH = 1 << 17


@dataclass
class EntityGraph:
    """The entity graph as arrays: node i is `ids[i]`; each undirected pair once (`source` < `target`,
    row-major order) with its summed weight; `psi[i]` the typed relations node i takes part in;
    `typed` the typed relations as stored (s, t, type: integer codes, self-relations included)."""

    ids: list[str]
    source: np.ndarray
    target: np.ndarray
    weight: np.ndarray
    psi: list[frozenset[str]]
    typed: pl.DataFrame

    @classmethod
    def build(cls, ids: list[str], relates: pl.DataFrame, mentions: pl.DataFrame) -> EntityGraph:
        """From the store's typed relations (source, target, type; each weighs 2) and mentions (entity,
        window): each pair of entities mentioned in one window is co-mentioned, weighed by the windows
        they share. The co-mentions are one sparse product, the window x entity incidence matrix's
        transpose times itself (memory: the pairs, not a row per pair of mentions: a window with k
        entities gave k^2 rows). Relations and mentions of ids not in `ids` are dropped."""
        n = len(ids)
        index = pl.DataFrame({"id": ids, "i": np.arange(n, dtype=np.int64)})
        typed = (
            relates.select("source", "target", "type")
            .join(index.rename({"id": "source", "i": "s"}), on="source")
            .join(index.rename({"id": "target", "i": "t"}), on="target")
            .select("s", "t", "type")
        )
        coded = mentions.select("entity", "window").join(index.rename({"id": "entity"}), on="entity")
        window = coded["window"].rank("dense").to_numpy().astype(np.int64) - 1
        incidence = sp.csr_matrix(  # float32: the counts stay exact, at half the memory
            (np.ones(coded.height, dtype=np.float32), (window, coded["i"].to_numpy())),
            shape=(int(window.max(initial=-1)) + 1, n),
        )
        del coded, window
        co = sp.triu(incidence.T @ incidence, k=1).tocoo()
        del incidence
        pairs = typed.filter(pl.col("s") != pl.col("t"))
        a, b = pairs["s"].to_numpy(), pairs["t"].to_numpy()
        summed = sp.coo_matrix(
            (
                np.concatenate([co.data, np.full(len(a), 2.0, dtype=np.float32)]),
                (np.concatenate([co.row, np.minimum(a, b)]), np.concatenate([co.col, np.maximum(a, b)])),
            ),
            shape=(n, n),
        ).tocsr()
        del co
        summed.sum_duplicates()
        # the relation types of the nodes that take part in one (most take part in none: no set for them)
        ends = pl.concat([pairs.select(i="s", type="type"), pairs.select(i="t", type="type")])
        psi = [frozenset()] * n
        for i, types in ends.group_by("i").agg(pl.col("type").unique()).iter_rows():
            psi[i] = frozenset(types)
        return cls(
            ids,
            np.repeat(np.arange(n, dtype=np.int32), np.diff(summed.indptr)),
            summed.indices.astype(np.int32, copy=False),
            summed.data.astype(np.float32, copy=False),
            psi,
            typed,
        )

    def neighbours(self) -> sp.csr_matrix:
        """The symmetric adjacency (CSR): row i's indices are i's neighbours."""
        n = len(self.ids)
        rows = np.concatenate([self.source, self.target])
        cols = np.concatenate([self.target, self.source])
        return sp.csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n, n))

    def louvain(self, seed: int) -> np.ndarray:
        """Seeded Louvain (Blondel et al., igraph's multilevel algorithm) over the weighted graph:
        each node's community number."""
        graph = igraph.Graph(n=len(self.ids))
        for start in range(0, len(self.source), EDGE_BATCH):  # converted a batch at a time (see EDGE_BATCH)
            end = start + EDGE_BATCH
            graph.add_edges(np.column_stack([self.source[start:end], self.target[start:end]]))
        igraph.set_random_number_generator(random.Random(seed))
        try:
            membership = graph.community_multilevel(weights=self.weight).membership
        finally:
            igraph.set_random_number_generator(random)
        return np.asarray(membership, dtype=np.int64)

    def weights_inside(self, community: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per node: the weight of its edges (its degree) and of those inside its own community; a typed
        relation of a node with itself counts twice (both of its ends), as any relation does."""
        n = len(self.ids)
        loops = self.typed.filter(pl.col("s") == pl.col("t"))["s"].to_numpy()
        looped = 4.0 * np.bincount(loops, minlength=n)  # weight 2, at both ends
        inside = community[self.source] == community[self.target]
        degree = np.bincount(self.source, self.weight, n) + np.bincount(self.target, self.weight, n) + looped
        within = (
            np.bincount(self.source[inside], self.weight[inside], n)
            + np.bincount(self.target[inside], self.weight[inside], n)
            + looped
        )
        return degree, within


def build_tree(
    entities: pl.DataFrame, graph: EntityGraph, vectors: VectorBatches, params: TreeParams = TreeParams()
) -> tuple[dict[str, int], dict]:
    """Community id per entity id, and statistics. `graph`: the entity graph over `entities`' ids, in
    their order; `vectors`: their name vectors, in that order, a batch at a time. The graph is held as
    integer arrays (about 24 bytes an edge) and the vectors are read a batch at a time wherever they are
    needed (the centroids, each reassignment pass), so the step's memory is those arrays and one batch,
    not a Python object per edge nor every entity's vector."""
    ids = entities["id"].to_list()
    if not ids:
        return {}, {"communities": 0}
    if graph.ids != ids:
        raise ValueError("the entity graph was built over other entities")
    psi = graph.psi
    community = graph.louvain(params.seed)
    seeds = int(community.max()) + 1
    adjacency = graph.neighbours()  # after Louvain, which holds the graph once more while it runs

    def batches() -> Iterator[tuple[int, np.ndarray]]:
        """(the first node's number, its batch of vectors), checked to cover every node once."""
        start = 0
        for batch in vectors():
            yield start, batch
            start += len(batch)
        if start != len(ids):
            raise ValueError(f"{start} entity vectors for {len(ids)} entities")

    def summary() -> tuple[dict[int, set[str]], dict[int, np.ndarray], dict[int, int]]:
        labels, inverse = np.unique(community, return_inverse=True)
        totals: np.ndarray | None = None
        for start, batch in batches():
            if totals is None:
                totals = np.zeros((len(labels), batch.shape[1]), dtype=np.float64)
            np.add.at(totals, inverse[start : start + len(batch)], batch)
        rel: dict[int, set[str]] = defaultdict(set)
        for node, c in enumerate(community.tolist()):
            rel[c] |= psi[node]
        units = unit_rows(totals)
        return (
            rel,
            {int(c): units[k] for k, c in enumerate(labels)},
            defaultdict(int, zip(labels.tolist(), np.bincount(inverse).tolist())),
        )

    rel, centroid, size = summary()
    moved, passes = 0, 0
    while passes < params.max_passes:  # reassignment to convergence: a pass that moves nothing ends it
        passes += 1
        moved_now = 0
        for start, batch in batches():
            for node, vector in enumerate(batch, start):
                own = int(community[node])
                neighbours = adjacency.indices[adjacency.indptr[node] : adjacency.indptr[node + 1]]
                options = set(community[neighbours].tolist()) - {own}
                if not options:
                    continue

                def phi(c: int) -> float:
                    return _jaccard(psi[node], rel[c]) + params.lam * float(vector @ centroid[c])  # noqa: B023 (called within this iteration)

                best = max(sorted(options), key=phi)
                if phi(best) > phi(own) + params.epsilon and size[best] < params.max_size:
                    community[node] = best
                    size[own] -= 1
                    size[best] += 1
                    moved_now += 1
        moved += moved_now
        rel, centroid, size = summary()
        if not moved_now:
            break
    merges = 0
    changed = True
    while changed:
        changed = False
        a_side, b_side = community[graph.source], community[graph.target]
        across = a_side != b_side
        adjacent = np.unique(
            np.column_stack([np.minimum(a_side, b_side)[across], np.maximum(a_side, b_side)[across]]), axis=0
        )
        scored = sorted(
            (
                (_jaccard(rel[a], rel[b]) + params.lam * float(centroid[a] @ centroid[b]), a, b)
                for a, b in adjacent.tolist()
            ),
            reverse=True,
        )
        used: set[int] = set()
        for score, a, b in scored:
            if score < params.merge_threshold:
                break
            if a in used or b in used or size[a] + size[b] > params.max_size:
                continue
            community[community == b] = a
            size[a] += size.pop(b)
            used |= {a, b}
            merges += 1
            changed = True
        rel, centroid, size = summary()
    _, renumbered = np.unique(community, return_inverse=True)
    return dict(zip(ids, renumbered.tolist())), {
        "communities": int(renumbered.max()) + 1,
        "louvain_seeds": seeds,
        "moved_nodes": moved,
        "reassignment_passes": passes,
        "merges": merges,
        "entities": len(ids),
        "edges": len(graph.source),
    }


SUMMARY_PROMPT = """Summarise this community of a clinical evidence knowledge graph in one or two sentences for a
clinician: what it is about (population, interventions, outcomes) and how its members relate. Use only the facts given.

Central members: {keywords}
Member types: {types}
Relations among members: {triples}

Answer with JSON only: {{"summary": "..."}}"""
SUMMARY_SCHEMA = {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}


def extractive_summary(digest: dict) -> str:
    """The offline summary: the community's member types, central members and typed relations
    among them, as one sentence each (nothing that is not in the graph)."""
    types = ", ".join(f"{t} {n}" for t, n in digest["types"])
    parts = [f"{digest['size']} entities ({types}); central: {', '.join(digest['keywords'])}."]
    if digest["triples"]:
        parts.append("Relations: " + "; ".join(f"{a} {r.replace('_', ' ')} {b}" for a, r, b in digest["triples"]) + ".")
    return " ".join(parts)


def community_summaries(digests: list[dict], client=None) -> tuple[list[str], str]:
    """One summary per community digest: through the LLM client when it has a model (its
    offline mode, or no client, gives the extractive summary), and which mode ran."""
    if client is None or client.offline:
        return [extractive_summary(d) for d in digests], "offline (extractive from the graph)"
    out = []
    for d in digests:
        prompt = fill(
            SUMMARY_PROMPT,
            {
                "keywords": ", ".join(d["keywords"]),
                "triples": "; ".join(f"({a}) -[{r}]-> ({b})" for a, r, b in d["triples"]) or "none",
            },
            types=", ".join(f"{t} {n}" for t, n in d["types"]),
        )
        out.append(
            client.complete_json(
                "community_summary", prompt, SUMMARY_SCHEMA, offline=lambda d=d: {"summary": extractive_summary(d)}
            ).data["summary"]
        )
    return out, f"llm:{client.model}"


def tree_tables(
    entities: pl.DataFrame,
    graph: EntityGraph,
    community: dict[str, int],
    attribute_counts: dict[str, int] | None = None,
    client=None,
    params: TreeParams = TreeParams(),
) -> tuple[dict[str, pl.DataFrame], str]:
    """Community and Keyword nodes with IN_COMMUNITY / HAS_KEYWORD / KEYWORD_OF edges. Keywords are
    the members of highest salience: weight of edges inside the community times the share of the
    member's weight that stays inside (central to its community and specific to it). Each community
    counts its L2 triples (typed relations among members) and L1 attributes (of members)."""
    of = np.array([community.get(i, -1) for i in graph.ids], dtype=np.int64)
    degree_of, inside_of = graph.weights_inside(of)
    degree = dict(zip(graph.ids, degree_of.tolist()))
    inside = dict(zip(graph.ids, inside_of.tolist()))
    triples: dict[int, list[tuple[str, str, str]]] = defaultdict(list)
    rel_types: dict[int, set[str]] = defaultdict(set)
    for s, t, typ in graph.typed.iter_rows():  # the typed relations only: a few per entity
        if of[s] >= 0:
            rel_types[int(of[s])].add(typ)
            if of[s] == of[t]:
                triples[int(of[s])].append((graph.ids[s], typ, graph.ids[t]))
    names = dict(zip(entities["id"].to_list(), entities["name"].to_list()))
    types = dict(zip(entities["id"].to_list(), entities["type"].to_list())) if "type" in entities.columns else {}
    members: dict[int, list[str]] = defaultdict(list)
    for node, c in community.items():
        members[c].append(node)

    def salience(n: str) -> float:
        return inside[n] * inside[n] / degree[n] if degree[n] else 0.0

    communities, keywords, in_comm, has_kw, kw_of, digests = [], {}, [], [], [], []
    for c, nodes in sorted(members.items()):
        top = sorted(nodes, key=lambda n: (-salience(n), names[n]))[: params.keywords]
        cid = f"community-{c}"
        strongest = sorted(set(triples[c]), key=lambda x: (-salience(x[0]) - salience(x[2]), x))[:3]
        digests.append(
            {
                "size": len(nodes),
                "keywords": [names[n] for n in top],
                "types": Counter(types.get(n, "Entity") for n in nodes).most_common(4),
                "triples": [(names[a], r, names[b]) for a, r, b in strongest],
            }
        )
        communities.append(
            {
                "id": cid,
                "name": " / ".join(names[n] for n in top),
                "size": len(nodes),
                "relation_types": sorted(rel_types[c]),
                "l2_triples": len(triples[c]),
                "l1_attributes": sum((attribute_counts or {}).get(n, 0) for n in nodes),
            }
        )
        for n in nodes:
            in_comm.append((n, cid))
        for n in top:
            kid = f"keyword|{names[n].lower()}"
            keywords[kid] = {"id": kid, "name": names[n].lower()}
            has_kw.append((cid, kid))
            kw_of.append((kid, n))
    summaries, mode = community_summaries(digests, client)
    for row, summary in zip(communities, summaries):
        row["summary"] = summary
    rel = {"from": pl.String, "to": pl.String}
    return {
        "Community": pl.DataFrame(
            communities,
            schema={
                "id": pl.String,
                "name": pl.String,
                "size": pl.Int64,
                "relation_types": pl.List(pl.String),
                "l2_triples": pl.Int64,
                "l1_attributes": pl.Int64,
                "summary": pl.String,
            },
        ),
        "Keyword": pl.DataFrame(list(keywords.values()), schema={"id": pl.String, "name": pl.String}),
        "IN_COMMUNITY": pl.DataFrame(in_comm, schema=rel, orient="row"),
        "HAS_KEYWORD": pl.DataFrame(sorted(set(has_kw)), schema=rel, orient="row"),
        "KEYWORD_OF": pl.DataFrame(sorted(set(kw_of)), schema=rel, orient="row"),
    }, mode
