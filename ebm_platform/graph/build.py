"""Turn one partition's documents, windows and extractions into Kùzu tables."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial

import numpy as np
import polars as pl

from ebm_platform import lake_files
from ebm_platform.graph.normalise import merge_entities, normalise
from ebm_platform.graph.schema import Schema

# Entity vectors a batch at a time, in the entities' order; each call reads them anew from the start.
VectorBatches = Callable[[], Iterator[np.ndarray]]

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


def _normalised(values: pl.Series) -> pl.Series:
    """`normalise` of each value, computed once per distinct value."""
    distinct = values.drop_nulls().unique().to_list()
    return values.replace_strict(distinct, [normalise(v) for v in distinct], default=None, return_dtype=pl.String)


def _rows(vectors: np.ndarray, row_of: dict[str, int], names: list[str]) -> np.ndarray:
    """The rows of `vectors` of these names (`row_of`: name -> row)."""
    return vectors[[row_of[n] for n in names]]


def _owned(frame: pl.DataFrame, code: str, key: str, columns: list) -> pl.DataFrame:
    """`frame`'s `columns` as nodes the partition owns: id = partition|key, then the partition."""
    return frame.select(pl.lit(f"{code}|").add(pl.col(key)).alias("id"), pl.lit(code).alias("partition"), *columns)


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
    `mentions` describe this partition's share and are not stored on the global node. Built as
    columns, not Python rows (a set of tuples costs about 200 bytes a row), and each distinct name is
    embedded once into one float32 matrix."""
    prefix = f"{code}|"
    tables: dict[str, pl.DataFrame] = {
        "Document": _owned(
            documents, code, "doc_id", ["doc_id", "title", "grade", pl.col("year").cast(pl.Int64), "source"]
        ).cast({k: pl.String for k in ("id", "partition", "doc_id", "title", "grade", "source")}),
        "Window": _owned(windows, code, "window_id", ["window_id", "doc_id", "grade", "section", "text"]).cast(
            pl.String
        ),
        "FROM_DOCUMENT": windows.select(
            (prefix + pl.col("window_id")).alias("from"), (prefix + pl.col("doc_id")).alias("to")
        ).cast(pl.String),
    }
    rows = elements.with_row_index("row")
    rows = rows.with_columns(norm=_normalised(rows["subject"]))
    mentioned = rows.filter(
        (pl.col("kind") == "entity") & pl.col("subject_type").is_not_null() & (pl.col("norm") != "")
    )
    keys = mentioned.select(type="subject_type", norm="norm").unique().sort("type", "norm")
    names = keys["norm"].unique().sort().to_list()
    vectors = embed(names) if names else np.zeros((0, 0), np.float32)  # a row per distinct name
    row_of = {name: i for i, name in enumerate(names)}
    canonical = merge_entities(list(keys.iter_rows()), partial(_rows, vectors, row_of), merge_threshold)
    ids = pl.DataFrame(
        [(t, n, f"{head_t}|{head}") for (t, n), (head_t, head) in canonical.items()],
        schema={"type": pl.String, "norm": pl.String, "eid": pl.String},
        orient="row",
    )
    del canonical, names
    # each entity's vector is its canonical normalised name's (the graph channel matches anchors to it), in the
    # entity table's order (its ids sorted), taken before the tables are built and the names' matrix dropped:
    # one matrix of vectors at a time (190 MB each at 128,000 names)
    heads = ids["eid"].unique().sort().str.splitn("|", 2).struct.field("field_1").to_list()
    matrix = _rows(vectors, row_of, heads) if heads else np.zeros((0, 0), np.float32)
    del vectors, row_of, heads

    def entity_id(frame: pl.DataFrame, type_: str, norm: str, alias: str) -> pl.DataFrame:
        """`frame` with the global entity id of its (type_, norm) columns (null when none)."""
        return frame.join(
            ids.rename({"type": type_, "norm": norm, "eid": alias}), on=[type_, norm], how="left", maintain_order="left"
        )

    mentions = entity_id(mentioned, "subject_type", "norm", "eid")
    # an entity's name is its most frequent surface form (the first seen among equals); mentions count rows
    surface = (
        mentions.group_by("eid", "subject")
        .agg(n=pl.len(), first=pl.col("row").min())
        .sort(["eid", "n", "first"], descending=[False, True, False])
        .group_by("eid", maintain_order=True)
        .agg(name=pl.col("subject").first(), mentions=pl.col("n").sum())
    )
    split = pl.col("eid").str.splitn("|", 2)
    tables["Entity"] = surface.select(
        id="eid",
        name="name",
        norm=split.struct.field("field_1"),
        type=split.struct.field("field_0"),
        pico_core=split.struct.field("field_0").is_in(list(schema.pico_core)),
        partition=pl.lit(code),
        mentions=pl.col("mentions").cast(pl.Int64),
    ).sort("id")
    tables["MENTIONED_IN"] = (
        mentions.select(pl.col("eid").alias("from"), (prefix + pl.col("window_id")).alias("to"))
        .unique()
        .join(tables["Entity"].select(pl.col("id").alias("from"), "name"), on="from", how="left")
        .sort("from", "to")
    )
    del mentioned, mentions, surface  # each intermediate frame is dropped once its tables are built
    others = entity_id(rows.filter(pl.col("kind") != "entity"), "subject_type", "norm", "source").filter(
        pl.col("source").is_not_null()
    )
    del rows
    relations = others.filter(pl.col("kind") == "relation")
    relations = entity_id(
        relations.with_columns(object_norm=_normalised(relations["object"])), "object_type", "object_norm", "target"
    ).filter(pl.col("target").is_not_null() & (pl.col("target") != pl.col("source")))
    tables["RELATES"] = (
        relations.group_by(
            pl.col("source").alias("from"), pl.col("target").alias("to"), pl.col("predicate").alias("type")
        )
        .agg(pl.col("window_id").max())
        .sort("from", "to", "type")
        .with_columns(partition=pl.lit(code))
        .cast(pl.String)
    )
    del relations
    attributes = others.filter(pl.col("kind") != "relation")
    triples = attributes.select("source", "predicate", "object").unique(maintain_order=True)
    triples = triples.with_columns(
        aid=pl.Series([f"{prefix}{_hash(*triple)}" for triple in triples.iter_rows()], dtype=pl.String)
    )
    attributes = attributes.join(triples, on=["source", "predicate", "object"], how="left", maintain_order="left")
    tables["Attribute"] = (
        attributes.unique("aid", keep="first", maintain_order=True)
        .select(id="aid", partition=pl.lit(code), name="predicate", value="object")
        .cast(pl.String)
    )
    tables["HAS_ATTRIBUTE"] = (
        attributes.group_by(pl.col("source").alias("from"), pl.col("aid").alias("to"))
        .agg(pl.col("window_id").max())
        .sort("from", "to")
        .cast(pl.String)
    )
    # (from one float32 matrix: Python float lists cost about 24 bytes a number, 1.8 GB for 125,000 entities)
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


def stored_vectors(files: list[lake_files.Location], ids: list[str]) -> VectorBatches:
    """The name vectors of the entities `ids`, in that order, read a batch at a time from knowledge_graph's
    partition files (`files`, in the order their entity tables were concatenated into `ids`; an entity
    that several partitions list is read from the first): whoever walks them holds a batch, not every
    entity's vector (4 KB a row at 384 floats, 190 MB at 125,000 entities). An error when the files
    list other entities than `ids`."""
    listed = (
        pl.concat([lake_files.read_parquet(f, ["id"])["id"] for f in files])
        if files
        else pl.Series([], dtype=pl.String)
    )
    first = listed.is_first_distinct()
    if listed.filter(first).to_list() != ids:
        raise ValueError("the knowledge_graph files list other entities than the tree's: read in another order?")
    keep = first.to_numpy()

    def batches() -> Iterator[np.ndarray]:
        offset = 0
        for location in files:
            for batch in lake_files.iter_batches(location, ["vector"]):
                rows = keep[offset : offset + batch.num_rows]
                offset += batch.num_rows
                if batch.num_rows:
                    values = batch.column(0).flatten().to_numpy(zero_copy_only=False)
                    yield values.astype(np.float32, copy=False).reshape(batch.num_rows, -1)[rows]

    return batches
