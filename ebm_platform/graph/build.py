"""Turn one partition's documents, windows and extractions into Kùzu tables."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable

import numpy as np
import polars as pl

from ebm_platform.graph.normalise import merge_entities, normalise
from ebm_platform.graph.schema import Schema

# Paper section 4.1: 357,844 nodes; 44,033 PICO-core (12.3%); shares of the core nodes.
PAPER_CORE_SHARE = 0.123
PAPER_CORE_MIX = {
    "Intervention": 0.315,
    "Condition": 0.227,
    "Outcome": 0.195,
    "Population": 0.155,
    "Arm": 0.049,
    "Device": 0.036,
    "Comparator": 0.024,
}


def _hash(*parts: str) -> str:
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]


def partition_tables(
    code: str,
    documents: pl.DataFrame,
    windows: pl.DataFrame,
    elements: pl.DataFrame,
    schema: Schema,
    embed: Callable[[list[str]], np.ndarray],
    merge_threshold: float = 0.92,
) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """Kùzu node/edge frames for one partition, and the entity table (with name vectors). Entities
    are global nodes (id = type|normalised name); the partition owns its windows, mentions,
    relations (which carry the partition) and attributes. The Entity frame's `partition` and
    `mentions` describe this partition's share and are not stored on the global node."""
    doc_rows = [
        {
            "id": f"{code}|{d['doc_id']}",
            "partition": code,
            "doc_id": d["doc_id"],
            "title": d["title"],
            "grade": d["grade"],
            "year": d["year"],
            "source": d["source"],
        }
        for d in documents.iter_rows(named=True)
    ]
    win_rows = [
        {
            "id": f"{code}|{w['window_id']}",
            "partition": code,
            "window_id": w["window_id"],
            "doc_id": w["doc_id"],
            "grade": w["grade"],
            "section": w["section"],
            "text": w["text"],
        }
        for w in windows.iter_rows(named=True)
    ]
    tables: dict[str, pl.DataFrame] = {
        "Document": pl.DataFrame(
            doc_rows,
            schema={
                "id": pl.String,
                "partition": pl.String,
                "doc_id": pl.String,
                "title": pl.String,
                "grade": pl.String,
                "year": pl.Int64,
                "source": pl.String,
            },
        ),
        "Window": pl.DataFrame(
            win_rows,
            schema={k: pl.String for k in ("id", "partition", "window_id", "doc_id", "grade", "section", "text")},
        ),
        "FROM_DOCUMENT": pl.DataFrame(
            {"from": [w["id"] for w in win_rows], "to": [f"{code}|{w['doc_id']}" for w in win_rows]},
            schema={"from": pl.String, "to": pl.String},
        ),
    }
    entity_rows = elements.filter(pl.col("kind") == "entity") if elements.height else elements
    keys = sorted(
        {(r["subject_type"], normalise(r["subject"])) for r in entity_rows.iter_rows(named=True)} - {(None, "")}
    )
    keys = [k for k in keys if k[1]]
    names = sorted({norm for _, norm in keys})
    vector_of = dict(zip(names, embed(names))) if names else {}  # each distinct name embedded once

    def lookup(texts: list[str]) -> np.ndarray:
        return np.stack([vector_of[t] for t in texts])

    canonical = merge_entities(keys, lookup, merge_threshold)

    def entity_id(type_: str, name: str) -> str | None:
        """Global identity (type + normalised name): the same entity in two conditions is one node."""
        key = canonical.get((type_, normalise(name)))
        return f"{key[0]}|{key[1]}" if key else None

    surface: dict[str, Counter] = {}
    mentions: set[tuple[str, str]] = set()
    for r in entity_rows.iter_rows(named=True):
        eid = entity_id(r["subject_type"], r["subject"])
        if eid:
            surface.setdefault(eid, Counter())[r["subject"]] += 1
            mentions.add((eid, f"{code}|{r['window_id']}"))
    ents = []
    for eid, names in sorted(surface.items()):
        type_, norm = eid.split("|", 1)
        ents.append(
            {
                "id": eid,
                "name": names.most_common(1)[0][0],
                "norm": norm,
                "type": type_,
                "pico_core": type_ in schema.pico_core,
                "partition": code,
                "mentions": sum(names.values()),
            }
        )
    tables["Entity"] = pl.DataFrame(
        ents,
        schema={
            "id": pl.String,
            "name": pl.String,
            "norm": pl.String,
            "type": pl.String,
            "pico_core": pl.Boolean,
            "partition": pl.String,
            "mentions": pl.Int64,
        },
    )
    tables["MENTIONED_IN"] = pl.DataFrame(sorted(mentions), schema={"from": pl.String, "to": pl.String}, orient="row")
    relates, attrs, has_attr = set(), {}, set()
    for r in (elements.filter(pl.col("kind") != "entity") if elements.height else elements).iter_rows(named=True):
        source = entity_id(r["subject_type"], r["subject"])
        if not source:
            continue
        if r["kind"] == "relation":
            target = entity_id(r["object_type"], r["object"])
            if target and target != source:
                relates.add((source, target, r["predicate"], r["window_id"]))
        else:
            aid = f"{code}|{_hash(source, r['predicate'], r['object'])}"
            attrs[aid] = {"id": aid, "partition": code, "name": r["predicate"], "value": r["object"]}
            has_attr.add((source, aid, r["window_id"]))
    dedup_relates = {(s, t, typ): w for s, t, typ, w in sorted(relates)}
    tables["RELATES"] = pl.DataFrame(
        [(s, t, typ, w, code) for (s, t, typ), w in dedup_relates.items()],
        schema={"from": pl.String, "to": pl.String, "type": pl.String, "window_id": pl.String, "partition": pl.String},
        orient="row",
    )
    tables["Attribute"] = pl.DataFrame(
        list(attrs.values()), schema={k: pl.String for k in ("id", "partition", "name", "value")}
    )
    dedup_attr = {(s, a): w for s, a, w in sorted(has_attr)}
    tables["HAS_ATTRIBUTE"] = pl.DataFrame(
        [(s, a, w) for (s, a), w in dedup_attr.items()],
        schema={"from": pl.String, "to": pl.String, "window_id": pl.String},
        orient="row",
    )
    # an entity's vector is its canonical normalised name's (the graph channel matches anchors to it)
    # (from one float32 matrix: Python float lists cost about 24 bytes a number, 1.8 GB for 125,000 entities)
    norms = tables["Entity"]["norm"].to_list()
    matrix = np.stack([vector_of[n] for n in norms]).astype(np.float32) if norms else np.zeros((0, 0), np.float32)
    entity_table = tables["Entity"].with_columns(pl.Series("vector", matrix).cast(pl.List(pl.Float32)))
    return tables, entity_table


def graph_stats(entities: pl.DataFrame, relations: pl.DataFrame, attributes: int, schema: Schema) -> dict:
    """Counts by node and relation type, and the PICO-core shares beside the paper's figures."""
    by_type = dict(Counter(entities["type"].to_list())) if entities.height else {}
    core = {t: by_type.get(t, 0) for t in schema.pico_core}
    core_total = sum(core.values())
    nodes_total = entities.height + attributes
    return {
        "entities": entities.height,
        "attributes": attributes,
        "relations": relations.height,
        "nodes_by_type": dict(sorted(by_type.items())),
        "relations_by_type": dict(sorted(Counter(relations["type"].to_list()).items())) if relations.height else {},
        "pico_core_share": round(core_total / nodes_total, 4) if nodes_total else 0.0,
        "pico_core_share_paper": PAPER_CORE_SHARE,
        "core_mix": {t: round(n / core_total, 3) if core_total else 0.0 for t, n in core.items()},
        "core_mix_paper": {t: PAPER_CORE_MIX.get(t) for t in schema.pico_core},
    }


def entity_matrix(entities: pl.DataFrame) -> np.ndarray:
    """The entities' name vectors as one float32 matrix, read without Python float lists (about 24
    bytes a number: 1.2 GB for 125,000 entities)."""
    column = entities["vector"]
    width = column.list.len().max() or 0
    return column.list.to_array(width).to_numpy().astype(np.float32, copy=False).reshape(len(column), width)
