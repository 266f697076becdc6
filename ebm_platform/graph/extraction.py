"""pico_extractions: schema-bounded entities, relations and attributes for every window."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator

import polars as pl

from ebm_platform.graph import pico_rules
from ebm_platform.graph.schema import Schema, load_schema, map_to_schema, validate
from ebm_platform.llm.client import LLMClient, LLMError
from ebm_platform.llm.prompts import fill

EXTRACTION_PROMPT = """Extract a schema-bounded knowledge graph from this clinical evidence window.
Use ONLY these node types: {nodes}
ONLY these relations (source type -> target type): {relations}
ONLY these attributes: {attributes}
Use names exactly as written in the text; do not add facts that are not in the window.

Window:
{text}

Answer with JSON only:
{{"entities": [{{"name": "...", "type": "..."}}],
 "relations": [{{"source": "<entity name>", "relation": "...", "target": "<entity name>"}}],
 "attributes": [{{"entity": "<entity name>", "attribute": "...", "value": "..."}}]}}"""

EXTRACTION_SCHEMA = {
    "type": "object",
    "properties": {k: {"type": "array"} for k in ("entities", "relations", "attributes")},
    "required": ["entities"],
}
ELEMENT_COLUMNS = ("window_id", "doc_id", "kind", "subject", "subject_type", "predicate", "object", "object_type")
ELEMENT_SCHEMA = {c: pl.String for c in ELEMENT_COLUMNS}
# windows whose elements are held as Python rows at once (about 1 KB a row; 17 rows a window): the rest are columns
ELEMENT_BATCH = 1000


def extraction_prompt(text: str, schema: Schema) -> str:
    relations = "; ".join(f"{r} ({'/'.join(s)} -> {'/'.join(t)})" for r, (s, t) in schema.relations.items())
    return fill(
        EXTRACTION_PROMPT,
        {"text": text},
        nodes=", ".join(schema.nodes),
        relations=relations,
        attributes=", ".join(schema.attributes),
    )


def to_elements(window_id: str, doc_id: str, extraction: dict) -> list[dict]:
    """Flatten one window's extraction into triple-like rows (kind entity/relation/attribute)."""
    types = {e["name"]: e["type"] for e in extraction["entities"]}
    rows = [
        dict(
            window_id=window_id,
            doc_id=doc_id,
            kind="entity",
            subject=e["name"],
            subject_type=e["type"],
            predicate="is_a",
            object=None,
            object_type=None,
        )
        for e in extraction["entities"]
    ]
    rows += [
        dict(
            window_id=window_id,
            doc_id=doc_id,
            kind="relation",
            subject=r["source"],
            subject_type=types[r["source"]],
            predicate=r["relation"],
            object=r["target"],
            object_type=types[r["target"]],
        )
        for r in extraction["relations"]
    ]
    rows += [
        dict(
            window_id=window_id,
            doc_id=doc_id,
            kind="attribute",
            subject=a["entity"],
            subject_type=types[a["entity"]],
            predicate=a["attribute"],
            object=a["value"],
            object_type=None,
        )
        for a in extraction["attributes"]
    ]
    return rows


def entities_by_window(elements: pl.DataFrame) -> dict[str, list[dict]]:
    """The entities ({name, type}, in extraction order) of each window of `to_elements` rows."""
    out: dict[str, list[dict]] = {}
    if not elements.height:  # an absent partition reads as a frame without columns
        return out
    for window_id, name, type_ in (
        elements.filter(pl.col("kind") == "entity").select("window_id", "subject", "subject_type").iter_rows()
    ):
        out.setdefault(window_id, []).append({"name": name, "type": type_})
    return out


def document_batches(windows: pl.DataFrame, size: int = ELEMENT_BATCH) -> Iterator[list[dict]]:
    """The windows as rows, whole documents at a time, about `size` windows a batch (a document's windows
    stay together: the abbreviations it defines in one name the spans of all)."""
    batch: list[dict] = []
    for (_,), document in windows.group_by("doc_id", maintain_order=True):
        if batch and len(batch) + document.height > size:
            yield batch
            batch = []
        batch.extend(document.to_dicts())
    if batch:
        yield batch


class Extractor:
    """Extracts windows through the LLM client (LLM mode) or the offline rules."""

    def __init__(self, schema: Schema, client: LLMClient, condition_names: tuple[str, ...] = ()) -> None:
        self.schema, self.client, self.condition_names = schema, client, condition_names
        # offline rules emit PICO-extended output; a mapped schema (the ablation) validates it first
        self.extended = load_schema("pico_extended") if schema.mapping else None
        self.drops: Counter = Counter()
        self.failed_windows = 0

    def window(self, text: str, tagged: list[dict] | None = None) -> dict:
        """One window's validated extraction; offline, `tagged` (the learned tagger's spans)
        supplies its P/I/C/O and the rules the rest."""
        offline: Callable[[], dict] = lambda: pico_rules.extract(text, self.condition_names, tagged).as_dict()  # noqa: E731
        try:
            result = self.client.complete_json(
                "pico_extraction", extraction_prompt(text, self.schema), EXTRACTION_SCHEMA, offline=offline
            )
        except LLMError:
            self.failed_windows += 1
            return {"entities": [], "relations": [], "attributes": []}
        raw = result.data
        if result.mode == "offline" and self.extended is not None:
            raw = map_to_schema(validate(raw, self.extended, self.drops), self.schema, self.drops)
        return validate(raw, self.schema, self.drops)

    def windows(self, rows: list[dict], tagged: dict[str, list[dict]] | None = None) -> pl.DataFrame:
        """The elements (`ELEMENT_COLUMNS`) of one batch of windows (`partition` keeps batches small: as Python
        rows, a 32,000-window partition's 530,000 elements held about 500 MB)."""
        elements: list[dict] = []
        for row in rows:
            spans = tagged.get(row["window_id"], []) if tagged is not None else None
            elements.extend(to_elements(row["window_id"], row["doc_id"], self.window(row["text"], spans)))
        return pl.DataFrame(elements, schema=ELEMENT_SCHEMA)

    def partition(
        self,
        windows: pl.DataFrame,
        tag: Callable[[list[dict]], dict[str, list[dict]]] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> pl.DataFrame:
        """The elements of a partition's windows, `document_batches` at a time: `tag`, when given, gives each
        batch's learned spans; only one batch's windows, spans and elements are ever Python objects."""
        frames, done = [pl.DataFrame(schema=ELEMENT_SCHEMA)], 0
        for batch in document_batches(windows):
            frames.append(self.windows(batch, tagged=tag(batch) if tag else None))
            done += len(batch)
            if progress:
                progress(f"{'tagged and ' if tag else ''}extracted {done}/{windows.height} windows")
        return pl.concat(frames, rechunk=False)  # the batches as chunks: no copy of the partition's elements

    def report(self) -> str:
        return json.dumps(dict(self.drops), sort_keys=True)
