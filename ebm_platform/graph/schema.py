"""Graph schemas as data (PICO-extended, PICO-neutral) and schema-bounded validation."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
MAX_NAME_CHARS = 200


@dataclass(frozen=True)
class Schema:
    """Node types, relations with (source, target) signatures, attributes, PICO-core types."""

    name: str
    nodes: tuple[str, ...]
    relations: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
    attributes: tuple[str, ...]
    pico_core: tuple[str, ...] = ()
    mapping: dict = field(default_factory=dict)


def load_schema(name_or_path: str) -> Schema:
    """`pico_extended`, `pico_neutral`, or a path to a schema YAML file."""
    path = Path(name_or_path)
    if not path.suffix:
        path = SCHEMA_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"graph schema not found: {name_or_path} (looked at {path})")
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    relations = {r: (tuple(sig["source"]), tuple(sig["target"])) for r, sig in raw["relations"].items()}
    return Schema(
        raw["name"],
        tuple(raw["nodes"]),
        relations,
        tuple(raw["attributes"]),
        tuple(raw.get("pico_core", ())),
        raw.get("map", {}),
    )


def _valid_name(name: object) -> bool:
    return isinstance(name, str) and 0 < len(name.strip()) <= MAX_NAME_CHARS


def validate(raw: object, schema: Schema, drops: Counter) -> dict:
    """Keep only schema-typed elements; count every dropped one by reason in `drops`."""
    out = {"entities": [], "relations": [], "attributes": []}
    if not isinstance(raw, dict):
        drops["not_an_object"] += 1
        return out
    types: dict[str, str] = {}
    for entity in raw.get("entities") or []:
        if not isinstance(entity, dict) or not _valid_name(entity.get("name")):
            drops["entity_bad_name"] += 1
        elif entity.get("type") not in schema.nodes:
            drops["entity_unknown_type"] += 1
        else:
            name = entity["name"].strip()
            types.setdefault(name, entity["type"])
            out["entities"].append({"name": name, "type": entity["type"]})
    for rel in raw.get("relations") or []:
        if not isinstance(rel, dict) or rel.get("relation") not in schema.relations:
            drops["relation_unknown_type"] += 1
            continue
        source, target = str(rel.get("source", "")).strip(), str(rel.get("target", "")).strip()
        if source not in types or target not in types:
            drops["relation_unknown_endpoint"] += 1
            continue
        allowed_sources, allowed_targets = schema.relations[rel["relation"]]
        if types[source] not in allowed_sources or types[target] not in allowed_targets:
            drops["relation_signature"] += 1
            continue
        out["relations"].append({"source": source, "relation": rel["relation"], "target": target})
    for attr in raw.get("attributes") or []:
        if not isinstance(attr, dict) or attr.get("attribute") not in schema.attributes:
            drops["attribute_unknown_type"] += 1
        elif str(attr.get("entity", "")).strip() not in types:
            drops["attribute_unknown_entity"] += 1
        elif not _valid_name(str(attr.get("value", ""))):
            drops["attribute_bad_value"] += 1
        else:
            out["attributes"].append(
                {"entity": attr["entity"].strip(), "attribute": attr["attribute"], "value": str(attr["value"]).strip()}
            )
    return out


def map_to_schema(extraction: dict, schema: Schema, drops: Counter) -> dict:
    """Collapse PICO-extended output into another schema through its `map` (ablation rerun)."""
    if not schema.mapping:
        return extraction
    nodes, rels, attrs = (schema.mapping.get(k, {}) for k in ("nodes", "relations", "attributes"))
    renamed = {e["name"]: nodes.get(e["type"]) for e in extraction["entities"]}
    mapped = {"entities": [], "relations": [], "attributes": []}
    for e in extraction["entities"]:
        if renamed[e["name"]] is None:
            drops["unmapped_entity"] += 1
        else:
            mapped["entities"].append({"name": e["name"], "type": renamed[e["name"]]})
    for r in extraction["relations"]:
        if rels.get(r["relation"]) and renamed.get(r["source"]) and renamed.get(r["target"]):
            mapped["relations"].append(dict(r, relation=rels[r["relation"]]))
        else:
            drops["unmapped_relation"] += 1
    for a in extraction["attributes"]:
        if attrs.get(a["attribute"]) and renamed.get(a["entity"]):
            mapped["attributes"].append(dict(a, attribute=attrs[a["attribute"]]))
        else:
            drops["unmapped_attribute"] += 1
    return mapped
