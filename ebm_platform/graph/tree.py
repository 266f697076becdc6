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

from collections import Counter, defaultdict
from dataclasses import dataclass

import networkx as nx
import numpy as np
import polars as pl

from ebm_platform.graph.build import entity_matrix
from ebm_platform.llm.prompts import fill


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


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v)
    return v / n if n else v


def build_tree(
    entities: pl.DataFrame, edges: pl.DataFrame, params: TreeParams = TreeParams()
) -> tuple[dict[str, int], dict]:
    """Community id per entity id, and statistics. `edges`: source, target, type, weight."""
    ids = entities["id"].to_list()
    if not ids:
        return {}, {"communities": 0}
    vectors = dict(zip(ids, entity_matrix(entities)))
    psi: dict[str, set[str]] = defaultdict(set)
    graph = nx.Graph()
    graph.add_nodes_from(ids)
    for s, t, typ, w in edges.select("source", "target", "type", "weight").iter_rows():
        if s in vectors and t in vectors:
            graph.add_edge(s, t, weight=graph.get_edge_data(s, t, {"weight": 0})["weight"] + w)
            if typ != "co_mention":
                psi[s].add(typ)
                psi[t].add(typ)
    seeds = nx.community.louvain_communities(graph, weight="weight", seed=params.seed)
    community = {node: c for c, members in enumerate(seeds) for node in members}

    def summary() -> tuple[dict[int, set[str]], dict[int, np.ndarray], dict[int, int]]:
        rel: dict[int, set[str]] = defaultdict(set)
        total: dict[int, np.ndarray] = {}
        size: dict[int, int] = defaultdict(int)
        for node, c in community.items():
            rel[c] |= psi[node]
            total[c] = total.get(c, 0) + vectors[node]
            size[c] += 1
        return rel, {c: _unit(v) for c, v in total.items()}, size

    rel, centroid, size = summary()
    moved, passes = 0, 0
    while passes < params.max_passes:  # reassignment to convergence: a pass that moves nothing ends it
        passes += 1
        moved_now = 0
        for node in ids:
            own = community[node]
            options = {community[n] for n in graph.neighbors(node)} - {own}
            if not options:
                continue

            def phi(c: int) -> float:
                return _jaccard(psi[node], rel[c]) + params.lam * float(vectors[node] @ centroid[c])  # noqa: B023 (called within this iteration)

            best = max(options, key=phi)
            if phi(best) > phi(own) + params.epsilon and size[best] < params.max_size:
                community[node] = best
                size[own] -= 1
                size[best] += 1
                moved_now += 1
        moved += moved_now
        rel, centroid, size = summary()
        if not moved_now:
            break
    rel, centroid, size = summary()
    members: dict[int, list[str]] = defaultdict(list)
    for node, c in community.items():
        members[c].append(node)
    merges = 0
    changed = True
    while changed:
        changed = False
        adjacent = {
            (min(community[s], community[t]), max(community[s], community[t]))
            for s, t in graph.edges()
            if community[s] != community[t]
        }
        scored = sorted(
            ((_jaccard(rel[a], rel[b]) + params.lam * float(centroid[a] @ centroid[b]), a, b) for a, b in adjacent),
            reverse=True,
        )
        used: set[int] = set()
        for score, a, b in scored:
            if score < params.merge_threshold:
                break
            if a in used or b in used or size[a] + size[b] > params.max_size:
                continue
            for node in members[b]:
                community[node] = a
            members[a].extend(members.pop(b))
            used |= {a, b}
            merges += 1
            changed = True
        rel, centroid, size = summary()
    renumber = {c: i for i, c in enumerate(sorted(set(community.values())))}
    community = {n: renumber[c] for n, c in community.items()}
    return community, {
        "communities": len(renumber),
        "louvain_seeds": len(seeds),
        "moved_nodes": moved,
        "reassignment_passes": passes,
        "merges": merges,
        "entities": len(ids),
        "edges": graph.number_of_edges(),
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
    edges: pl.DataFrame,
    community: dict[str, int],
    attribute_counts: dict[str, int] | None = None,
    client=None,
    params: TreeParams = TreeParams(),
) -> tuple[dict[str, pl.DataFrame], str]:
    """Community and Keyword nodes with IN_COMMUNITY / HAS_KEYWORD / KEYWORD_OF edges. Keywords are
    the members of highest salience: weight of edges inside the community times the share of the
    member's weight that stays inside (central to its community and specific to it). Each community
    counts its L2 triples (typed relations among members) and L1 attributes (of members)."""
    inside: dict[str, float] = defaultdict(float)
    degree: dict[str, float] = defaultdict(float)
    triples: dict[int, list[tuple[str, str, str]]] = defaultdict(list)
    rel_types: dict[int, set[str]] = defaultdict(set)
    for s, t, typ, w in edges.select("source", "target", "type", "weight").iter_rows():
        degree[s] += w
        degree[t] += w
        if s in community and t in community and community[s] == community[t]:
            inside[s] += w
            inside[t] += w
            if typ != "co_mention":
                triples[community[s]].append((s, typ, t))
        if typ != "co_mention" and s in community:
            rel_types[community[s]].add(typ)
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
