"""CLAIMS (seeds/claims.txt; methods.md section 4): a per-question claim graph.

1. Retrieve the best ClaimsConstants.windows windows (scored_candidates; the paper leaves the
   number open: EBM_CLAIMS_WINDOWS, chosen on Evidence Inference train questions by `ebm eval
   tune --strategy claims`). Extract atomic claims: with an LLM two
   gleaning passes per window (extract, then "what did you miss"); offline, clause-level claims
   from the windows' result and conclusion sentences (sentences that report a comparison, split at
   ';' and at ', whereas / while / but').
2. One (subject, predicate, object) triple per claim: offline the claim's first intervention-like
   and first outcome-like PICO entities (graph/pico_rules.py) joined by the direction the claim
   states (increased / decreased / no difference), else "associated"; with fewer than two
   entities the claim's study (window title) is the other end.
3. Entities merge by average-linkage agglomerative clustering at cosine similarity MERGE_SIMILARITY
   (scikit-learn); mostly-numeric names never merge. Claims are the edges of an undirected
   networkx MultiGraph between merged entities.
4. Claims are scored against the question by the fine scorer (the hand-set cos + 0.4 coverage on
   the claim text, or the cross-encoder when one is set: the learned model reads window features
   a claim does not have); the top TOP_CLAIMS; a claim that shares an entity with (is a 1-hop
   neighbour of) a higher-ranked kept claim is suppressed.
5. Each kept root's connected component is summarised layer by layer from the outermost BFS layer
   inward (offline: extractive, the best claim of each layer carried inward; LLM when set); the
   core answer is the root summaries, cited. Ranked windows = the provenance of the kept claims
   in rank order, then the windows their summaries quote. Source diversity = distinct articles /
   kept claims.
Steps 1 and the claim scores of step 4 are gathered once (gather_claims); the graph, ranking and
summaries are built per window count (claim_graph), so tuning the count re-reads nothing.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, replace

import networkx as nx
import numpy as np

from ebm_platform.corpus.windows import flatten
from ebm_platform.graph.pico_rules import extract
from ebm_platform.llm.prompts import data_block, fill
from ebm_platform.retrieval.features import FEATURES, QueryView
from ebm_platform.retrieval.pipeline import Candidate, Laps, Retrieval, Retriever, scored_candidates
from ebm_platform.retrieval.verdict import DECREASED, INCREASED, NO_DIFFERENCE, offline_verdict
from ebm_platform.settings import Settings, get_settings

TOP_CLAIMS = 10
MERGE_SIMILARITY = 0.8
SUMMARY_LAYERS = 3  # at most this many claims carried into a root's summary (root included)
_RESULT = re.compile(
    r"\b(?:significant\w*|differ\w*|increas\w*|decreas\w*|reduc\w*|improv\w*|higher|lower|greater|"
    r"compared|versus|vs|associated|effective|superior|inferior|similar|p\s*[<=>])",
    re.I,
)
_CLAUSE = re.compile(r";\s+|,\s+(?=(?:whereas|while|but)\b)", re.I)
_NUMERIC = re.compile(r"[\d.,%±\s-]")
_SUBJECT_TYPES = ("Intervention", "Arm", "Comparator", "Population", "Condition")
_OBJECT_TYPES = ("Outcome", "AdverseEvent")
PREDICATES = {INCREASED: "increases", DECREASED: "decreases", NO_DIFFERENCE: "no difference in"}


@dataclass
class Claim:
    text: str
    window_id: str
    doc_id: str
    subject: str = ""
    predicate: str = "associated"
    object: str = ""
    score: float = 0.0
    nodes: tuple[int, int] = (0, 0)


def claims_offline(text: str) -> list[str]:
    """Clause-level claims from the sentences of `text` that report a result."""
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z(])", flatten(text)):
        if not _RESULT.search(sentence):
            continue
        for clause in _CLAUSE.split(sentence):
            clause = clause.strip(" ,;")
            if len(clause.split()) >= 4 and _RESULT.search(clause):
                out.append(clause)
    return out


def triple(claim: str, study: str) -> tuple[str, str, str]:
    """(subject, predicate, object) of a claim; "associated" when it states no direction."""
    entities = extract(claim).entities
    subject = next((e["name"] for e in entities if e["type"] in _SUBJECT_TYPES), None)
    obj = next((e["name"] for e in entities if e["type"] in _OBJECT_TYPES and e["name"] != subject), None)
    names = [e["name"] for e in entities if e["name"] not in (subject, obj)]
    subject = subject or (names.pop(0) if names else None)
    obj = obj or (names.pop(0) if names else None)
    verdict, _ = offline_verdict([claim])
    predicate = PREDICATES.get(verdict, "associated")
    if subject and obj:
        return subject, predicate, obj
    return subject or obj or study, "associated", study


def mostly_numeric(name: str) -> bool:
    return len(_NUMERIC.findall(name)) * 2 > len(name)


def merge_entities(names: list[str], vectors: np.ndarray, similarity: float = MERGE_SIMILARITY) -> list[int]:
    """Cluster label per name: average-linkage at cosine >= `similarity`; mostly-numeric names stay alone."""
    from sklearn.cluster import AgglomerativeClustering

    labels = list(range(len(names)))
    words = [i for i, n in enumerate(names) if not mostly_numeric(n)]
    if len(words) >= 2:
        clustering = AgglomerativeClustering(
            n_clusters=None, metric="cosine", linkage="average", distance_threshold=1.0 - similarity
        ).fit(vectors[words])
        for i, label in zip(words, clustering.labels_):
            labels[i] = len(names) + int(label)
    return labels


def suppress_neighbours(ranked: list[tuple[int, int]], top: int = TOP_CLAIMS) -> tuple[list[int], dict[int, int]]:
    """Over claims (edges, best first) keep the top `top` that share no entity with a higher-ranked
    kept claim. Returns kept claim indices and suppressed index -> the kept claim it neighbours."""
    kept: list[int] = []
    suppressed: dict[int, int] = {}
    for i, (a, b) in enumerate(ranked[:top]):
        neighbour = next((k for k in kept if {a, b} & set(ranked[k])), None)
        if neighbour is None:
            kept.append(i)
        else:
            suppressed[i] = neighbour
    return kept, suppressed


def layers(graph: nx.MultiGraph, root: tuple[int, int]) -> list[list[tuple[int, int, int]]]:
    """The root's component as BFS layers of edges (u, v, key): layer d holds the edges whose nearer end
    is d steps from the root's ends; layer 0 includes the root edge itself."""
    distance = nx.multi_source_dijkstra_path_length(graph, set(root))
    out: dict[int, list] = defaultdict(list)
    for u, v, key in graph.edges(keys=True):
        if u in distance and v in distance:
            out[min(distance[u], distance[v])].append((u, v, key))
    return [out[d] for d in sorted(out)]


def summarise_offline(layered: list[list[Claim]], root: Claim, keep: int = SUMMARY_LAYERS) -> list[Claim]:
    """Layer by layer from the outermost inward, carry the best claim of each layer; the summary is the
    root and the best carried claims (at most `keep`), innermost first."""
    carried: list[Claim] = []
    for layer in reversed(layered):
        others = [c for c in layer if c is not root]
        if others:
            carried.append(max(others, key=lambda c: c.score))
    best = sorted(carried, key=lambda c: -c.score)[: keep - 1]
    return [root, *sorted(best, key=lambda c: next(d for d, layer in enumerate(layered) if c in layer))]


GLEAN_PROMPT = """Extract every atomic, decontextualised factual claim (each understandable alone: name the
intervention, comparator, outcome and population) from this passage of "{title}".
{previous}Passage: {text}
JSON only: {{"claims": [{{"claim": "...", "subject": "...", "predicate": "...", "object": "..."}}]}}"""
GLEAN_SCHEMA = {
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            "items": {"type": "object", "properties": {"claim": {"type": "string"}}, "required": ["claim"]},
        }
    },
    "required": ["claims"],
}
SUMMARY_PROMPT = """Question: {question}
Summarise these claims (outer layers first, then the claims closer to the root claim) into 1-2 sentences
that keep every number and direction: {claims}
JSON only: {{"summary": "..."}}"""


def _extract(r: Retriever, c: Candidate) -> tuple[list[dict], str]:
    """Claims of one window: two LLM gleaning passes, or the offline clause-level claims."""
    title = c.row["title"]

    def offline() -> dict:
        return {
            "claims": [
                {"claim": t, **dict(zip(("subject", "predicate", "object"), triple(t, title)))}
                for t in claims_offline(c.row["text"])
            ]
        }

    found: list[dict] = []
    mode = "offline"
    for round_ in range(1 if r.client.offline else 2):
        previous = (
            ""
            if not found
            else "Claims already found (add only the missed ones): "
            + data_block("; ".join(x["claim"] for x in found))
            + "\n"
        )
        result = r.client.complete_json(
            f"claims_glean_{round_}",
            fill(GLEAN_PROMPT, {"title": title, "text": c.row["text"]}, previous=previous),
            GLEAN_SCHEMA,
            offline=offline,
        )
        mode = result.mode
        found += result.data["claims"]
    for x in found:
        if not (x.get("subject") and x.get("object")):
            x.update(zip(("subject", "predicate", "object"), triple(x["claim"], title)))
        x["predicate"] = x.get("predicate") or "associated"
    return found, mode


def _score(r: Retriever, question: str, qvec: np.ndarray, texts: list[str]) -> list[float]:
    """The fine scorer on claim texts (cosine and coverage columns of a feature row)."""
    vectors = r._embed(texts)
    features = np.zeros((len(texts), len(FEATURES)), dtype=np.float32)
    features[:, FEATURES.index("cosine")] = vectors @ qvec
    features[:, FEATURES.index("coverage")] = [r.term_statistics.coverage(question, t) for t in texts]
    return r.reranker.fine(question, texts, features, learned=False)


@dataclass(frozen=True)
class ClaimsConstants:
    """What the paper leaves open: how many of the best retrieved windows claims come from."""

    windows: int

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> ClaimsConstants:
        return cls((settings or get_settings()).claims_windows)


@dataclass
class ClaimPool:
    """Steps 1 and 4's scores for one question: the retrieved windows in rank order and every
    claim extracted from them, scored against the question."""

    question: str
    view: QueryView
    laps: Laps
    windows: list[Candidate]
    claims: list[Claim]
    modes: set[str]


def gather_claims(r: Retriever, question: str, conditions: list[str] | None, depth: int) -> ClaimPool:
    """The best `depth` windows of the hybrid channels and their scored claims."""
    laps = Laps()
    ranked, view, _ = scored_candidates(r, question, conditions, laps)
    windows = ranked[:depth]
    found: list[Claim] = []
    modes = set()
    for c in windows:
        extracted, mode = _extract(r, c)
        modes.add(mode)
        found += [
            Claim(x["claim"], c.window_id, c.row["doc_id"], x["subject"], x["predicate"], x["object"])
            for x in extracted
        ]
    for claim, score in zip(found, _score(r, question, view.vector, [x.text for x in found]) if found else []):
        claim.score = score
    laps.lap("claims")
    return ClaimPool(question, view, laps, windows, found, modes)


def claims(
    r: Retriever, question: str, conditions: list[str] | None, constants: ClaimsConstants | None = None
) -> Retrieval:
    """CLAIMS over the lake, with the window count from Settings unless given."""
    k = constants or ClaimsConstants.from_settings()
    return claim_graph(r, gather_claims(r, question, conditions, k.windows), k)


def claim_graph(r: Retriever, pool: ClaimPool, constants: ClaimsConstants) -> Retrieval:
    """Steps 2-5 over the claims of the pool's best `constants.windows` windows."""
    question, view, laps, modes = pool.question, pool.view, pool.laps, pool.modes
    windows = pool.windows[: constants.windows]
    for c in windows:
        c.scores.pop("claims", None)  # a pool ranked again (tuning) starts from clean explain rows
    by_id = {c.window_id: c for c in windows}
    found = [replace(x) for x in pool.claims if x.window_id in by_id]
    if not found:
        return Retrieval(
            question,
            "claims",
            view.vector,
            view.anchors,
            [],
            windows,
            laps.timings,
            {
                "fine_scorer": "claims ranked by the fine scorer",
                "betr": "not applied",
                "claims": "no result claim in the retrieved windows",
            },
        )
    names = sorted({n for x in found for n in (x.subject, x.object)})
    labels = merge_entities(names, r._embed_short(names))
    label_of = dict(zip(names, labels))
    representative = {}
    for name, label in zip(names, labels):
        representative.setdefault(label, name)
    graph = nx.MultiGraph()
    found.sort(key=lambda x: -x.score)
    for i, claim in enumerate(found):
        claim.nodes = (label_of[claim.subject], label_of[claim.object])
        graph.add_edge(*claim.nodes, key=i)
    kept, suppressed = suppress_neighbours([x.nodes for x in found])
    laps.lap("graph and ranking")
    core, summaries, roots, quoted = [], [], [], []
    for k in kept:
        root = found[k]
        layered = [[found[key] for _, _, key in layer] for layer in layers(graph, root.nodes)]
        summary = summarise_offline(layered, root)
        result = r.client.complete_json(
            "claims_summary",
            fill(
                SUMMARY_PROMPT,
                {"claims": " | ".join(x.text for layer in reversed(layered) for x in layer)[:6000]},
                question=question,
            ),
            {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]},
            offline=lambda: {"summary": " ".join(x.text.rstrip(".") + "." for x in summary)},  # noqa: B023 (called within this iteration)
        )
        cited = list(dict.fromkeys(x.window_id for x in summary))
        core.append({"statement": result.data["summary"], "window_ids": cited})
        summaries.append(
            {
                "root": root.text,
                "triple": [representative[root.nodes[0]], root.predicate, representative[root.nodes[1]]],
                "component_claims": sum(len(layer) for layer in layered),
                "layers": len(layered),
                "summary": result.data["summary"],
            }
        )
        roots.append(root.window_id)
        quoted += cited
    for rank, claim in enumerate(found[:TOP_CLAIMS], 1):
        by_id[claim.window_id].scores.setdefault("claims", []).append(
            {
                "rank": rank,
                "claim": claim.text,
                "score": round(claim.score, 4),
                "triple": [claim.subject, claim.predicate, claim.object],
                "status": "kept (root)"
                if rank - 1 in kept
                else f"suppressed: neighbour of claim {suppressed[rank - 1] + 1}",
            }
        )
    chosen = [by_id[w] for w in dict.fromkeys(roots + quoted)]
    for c in chosen:
        c.final = max(x.score for x in found if x.window_id == c.window_id)
    laps.lap("summaries")
    diversity = len({found[k].doc_id for k in kept}) / len(kept)
    return Retrieval(
        question,
        "claims",
        view.vector,
        view.anchors,
        chosen[: r.params.budget],
        windows,
        laps.timings,
        {
            "fine_scorer": "claims ranked by " + r.reranker.fine_name(False) + " on the claim text",
            "betr": "not applied (CLAIMS ranks claims, not grades)",
            "claims": f"{len(found)} claims, {graph.number_of_nodes()} merged entities, {len(kept)} roots kept",
            "extraction": "offline clause-level claims" if modes <= {"offline"} else f"llm:{r.client.model}",
            "source_diversity": f"{diversity:.2f} (distinct articles per kept claim)",
        },
        details={"roots": summaries, "suppressed": {found[i].text: found[k].text for i, k in suppressed.items()}},
        core=core,
    )
