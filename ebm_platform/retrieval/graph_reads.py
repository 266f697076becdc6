"""Reads from the lake's knowledge graph that the seed strategies share (META-RAG's extrapolation,
KG refinement's seeds): entity name vectors by id and the entities a document's windows mention."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import polars as pl

from ebm_platform.graph.channel import GraphChannel


@lru_cache(maxsize=4)
def _row_of(graph: GraphChannel) -> dict[str, int]:
    return {eid: i for i, eid in enumerate(graph.entities["id"].to_list())}


def entity_vectors(graph: GraphChannel, ids: list[str]) -> np.ndarray:
    """The stored name vectors of the given entity ids (rows in the given order)."""
    rows = [_row_of(graph)[i] for i in ids]
    return graph.vectors[rows] if rows else np.zeros((0, graph.vectors.shape[1]), dtype=np.float32)


def document_entities(graph: GraphChannel, doc_ids: list[str], types: tuple[str, ...]) -> pl.DataFrame:
    """Entities of the given types mentioned in the given documents' windows (doc_id, type, id, name)."""
    return graph.store.query(
        "MATCH (e:Entity)-[:MENTIONED_IN]->(w:Window) WHERE w.doc_id IN $docs AND e.type IN $types "
        "RETURN DISTINCT w.doc_id AS doc_id, e.type AS type, e.id AS id, e.name AS name",
        {"docs": doc_ids, "types": list(types)},
    ).sort("doc_id", "type", "id", "name")  # not the store's order, which follows the partitions' commits
