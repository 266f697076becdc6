"""Whole-graph statistics (nodes, relations, attributes, PICO-core shares) read from Kùzu."""

from __future__ import annotations

import re
from pathlib import Path

from ebm_platform.graph.build import PAPER_CORE_MIX, PAPER_CORE_SHARE
from ebm_platform.graph.store import GraphStore

VERB_FORMS = re.compile(
    r"^(?:randomi[sz]ed|assigned|allocated|received|receiving|underwent|compared|treated|showed|included|"
    r"enrolled|improved|reduced|increased|decreased)\b|\b(?:was|were|is|are|had|has|have|been|did)\b",
    re.I,
)
LONE_ABBREVIATION = re.compile(r"^[A-Z][A-Z0-9-]{1,5}$")


def is_verb_phrase(name: str) -> bool:
    """A name that starts with a verb form or holds a finite auxiliary ('randomized into two ...')."""
    return bool(VERB_FORMS.search(name))


def is_lone_abbreviation(name: str) -> bool:
    """A name that is one short all-capitals token ('MR', 'CQ')."""
    return bool(LONE_ABBREVIATION.match(name.strip()))


def graph_summary(path: Path) -> dict:
    """Counts by type and per condition (entities mentioned there), entities shared by several
    conditions, and the paper's PICO-core figures beside ours."""
    with GraphStore(path, read_only=True) as store:
        nodes = store.query("MATCH (e:Entity) RETURN e.type AS type, e.pico_core AS core, count(*) AS n ORDER BY type")
        per_partition = store.query(
            "MATCH (e:Entity)-[:MENTIONED_IN]->(w:Window) RETURN w.partition AS partition, "
            "e.pico_core AS core, count(DISTINCT e.id) AS n ORDER BY partition"
        )
        relations = store.query(
            "MATCH (:Entity)-[r:RELATES]->(:Entity) RETURN r.partition AS partition, "
            "r.type AS type, count(*) AS n ORDER BY partition, type"
        )
        attributes = store.count("MATCH (a:Attribute) RETURN count(*)")
        communities = store.count("MATCH (c:Community) RETURN count(*)")
        core_names = store.query("MATCH (e:Entity) WHERE e.pico_core RETURN e.name AS name")["name"].to_list()
        shared = store.count(
            "MATCH (e:Entity)-[:MENTIONED_IN]->(w:Window) WITH e, count(DISTINCT w.partition) AS k "
            "WHERE k > 1 RETURN count(*)"
        )
    entities = int(nodes["n"].sum()) if nodes.height else 0
    core = nodes.filter(nodes["core"]) if nodes.height else nodes
    core_total = int(core["n"].sum()) if core.height else 0

    def total(frame, column: str, value: str) -> int:
        return int(frame.filter(frame[column] == value)["n"].sum()) if frame.height else 0

    return {
        "entities": entities,
        "attributes": attributes,
        "relations": int(relations["n"].sum()) if relations.height else 0,
        "communities": communities,
        "pico_core_share": round(core_total / (entities + attributes), 4) if entities else 0.0,
        "pico_core_share_paper": PAPER_CORE_SHARE,
        "core_mix": {t: round(total(core, "type", t) / core_total, 3) if core_total else 0.0 for t in PAPER_CORE_MIX},
        "core_mix_paper": PAPER_CORE_MIX,
        "nodes_by_type": {t: total(nodes, "type", t) for t in sorted(set(nodes["type"]))} if nodes.height else {},
        "relations_by_type": {t: total(relations, "type", t) for t in sorted(set(relations["type"]))}
        if relations.height
        else {},
        "pico_core_names": {
            "total": len(core_names),
            "verb_phrases": sum(map(is_verb_phrase, core_names)),
            "lone_abbreviations": sum(map(is_lone_abbreviation, core_names)),
        },
        "shared_entities": shared,
        "per_condition": {
            p: {
                "entities": total(per_partition, "partition", p),
                "pico_core": total(per_partition.filter(per_partition["core"]), "partition", p),
            }
            for p in sorted(set(per_partition["partition"]))
        }
        if per_partition.height
        else {},
    }
