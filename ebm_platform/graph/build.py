"""Turn one partition's documents, windows and extractions into Kùzu tables, a batch at a time: the inputs
go from their parquet files into a scratch DuckDB database (which spills to disk beyond `BUILD_MEMORY`), the
tables are computed there and written as parquet files that Kùzu copies, and the entities' name vectors go to
a file as they are embedded. The process holds a batch of rows and the partition's distinct entities, not its
windows, mentions or vectors."""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from ebm_platform import lake_files
from ebm_platform.graph.normalise import merge_entities, normalise
from ebm_platform.graph.schema import Schema
from ebm_platform.index.embeddings import EMBED_CHUNK

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

BUILD_MEMORY = "256MB"  # what the build's DuckDB database holds in memory before it spills to its folder
BATCH_ROWS = 16_384  # input rows read, names normalised and entity rows written at a time
# the input columns the graph is built from, with their types in the build database
INPUTS = {
    "documents": {"doc_id": "VARCHAR", "title": "VARCHAR", "grade": "VARCHAR", "year": "BIGINT", "source": "VARCHAR"},
    "windows": {
        "window_id": "VARCHAR",
        "doc_id": "VARCHAR",
        "grade": "VARCHAR",
        "section": "VARCHAR",
        "text": "VARCHAR",
    },
    "elements": {
        "window_id": "VARCHAR",
        "kind": "VARCHAR",
        "subject": "VARCHAR",
        "subject_type": "VARCHAR",
        "predicate": "VARCHAR",
        "object": "VARCHAR",
        "object_type": "VARCHAR",
    },
}
# An element's subject (`side` s) or a relation's object (o) as a global entity: its normalised name, then its id.
_ENTITY_OF = (
    "JOIN norms n{side} ON e.{column} = n{side}.value "
    "JOIN ids {side} ON {side}.type = e.{column}_type AND {side}.norm = n{side}.norm"
)
# Kùzu's node and edge tables, as queries over the build database ({code}, {prefix}: the partition's)
_TABLES = {
    "Document": "SELECT {prefix} || doc_id AS id, {code} AS partition, doc_id, title, grade, year, source "
    "FROM documents ORDER BY row",
    "Window": "SELECT {prefix} || window_id AS id, {code} AS partition, window_id, doc_id, grade, section, text "
    "FROM windows ORDER BY row",
    "FROM_DOCUMENT": 'SELECT {prefix} || window_id AS "from", {prefix} || doc_id AS "to" FROM windows ORDER BY row',
    "MENTIONED_IN": 'SELECT m."from", m."to", en.name FROM (SELECT DISTINCT eid AS "from", {prefix} || window_id AS "to" '
    'FROM mentions) m JOIN entities en ON en.id = m."from" ORDER BY m."from", m."to"',
    "RELATES": 'SELECT s.eid AS "from", o.eid AS "to", e.predicate AS type, max(e.window_id) AS window_id, '
    "{code} AS partition FROM elements e "
    + _ENTITY_OF.format(side="s", column="subject")
    + " "
    + _ENTITY_OF.format(side="o", column="object")
    + " WHERE e.kind = 'relation' AND s.eid <> o.eid GROUP BY ALL ORDER BY 1, 2, 3",
    "Attribute": "SELECT aid AS id, {code} AS partition, predicate AS name, object AS value FROM attributes "
    "QUALIFY row_number() OVER (PARTITION BY aid ORDER BY row) = 1 ORDER BY row",
    "HAS_ATTRIBUTE": 'SELECT source AS "from", aid AS "to", max(window_id) AS window_id FROM attributes '
    "GROUP BY ALL ORDER BY 1, 2",
}


def read_rows(path: Path, rows: Sequence[int] | np.ndarray, width: int) -> np.ndarray:
    """These rows of a float32 matrix file (`width` columns), in their order, read with one `pread` per run of
    consecutive rows: the process holds the rows asked for (a mapping of the file would hold every page
    that the kernel maps around each row read, most of the file for rows spread across it)."""
    rows = np.asarray(rows, dtype=np.int64)
    out = np.empty((len(rows), width), np.float32)
    if not len(rows):
        return out
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(ordered) != 1) + 1, [len(rows)]])
    size = width * 4
    with open(path, "rb") as handle:
        for start, end in zip(starts[:-1].tolist(), starts[1:].tolist()):
            data = os.pread(handle.fileno(), (end - start) * size, int(ordered[start]) * size)
            out[order[start:end]] = np.frombuffer(data, np.float32).reshape(end - start, width)
    return out


def _ingest(con: duckdb.DuckDBPyConnection, table: str, locations: Sequence[lake_files.Location]) -> None:
    """The `INPUTS[table]` columns of these parquet files into `table` of the build database, a batch at a
    time, each row with its number (`row`: its place in the files, in order)."""
    columns = INPUTS[table]
    con.execute(f"CREATE TABLE {table} (row BIGINT, {', '.join(f'{c} {t}' for c, t in columns.items())})")
    rows = 0
    for location in locations:
        for batch in lake_files.iter_batches(location, list(columns), BATCH_ROWS):
            _insert(con, table, batch.append_column("row", pa.array(np.arange(rows, rows + batch.num_rows))))
            rows += batch.num_rows


def _insert(con: duckdb.DuckDBPyConnection, table: str, data: pa.Table | pa.RecordBatch) -> None:
    """`data`'s rows into `table`, its columns matched by name."""
    con.register("batch", data)
    con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM batch")
    con.unregister("batch")


@dataclass
class PartitionGraph:
    """One partition's graph staged in a scratch folder for the store: its node and edge tables as parquet
    files that Kùzu copies (`files`, with their `rows`), its entity rows in memory (`entities`: id, name,
    norm, type, pico_core, partition, mentions; without vectors) and their name vectors in a file. The
    folder goes when the entity table has been read (`entity_table`) or the object is dropped."""

    scratch: tempfile.TemporaryDirectory
    files: dict[str, Path]
    rows: dict[str, int]
    entities: pl.DataFrame
    vector_rows: np.ndarray  # each entity's row in the vectors file: its canonical normalised name's
    width: int
    relations_by_type: dict[str, int]
    mentions_before_merge: int

    @property
    def vectors(self) -> Path:
        return Path(self.scratch.name) / "vectors.f32"

    def tables(self) -> dict[str, pl.DataFrame | Path]:
        """What `GraphStore.replace_partition` copies: the entity rows, and every table file that has rows."""
        return {"Entity": self.entities, **{t: f for t, f in self.files.items() if self.rows[t]}}

    def entity_table(self) -> pa.RecordBatchReader:
        """The entity rows with their name vectors (List(Float32)), `BATCH_ROWS` at a time; the scratch
        folder is removed once they have been read."""
        frame = self.entities.to_arrow(compat_level=pl.CompatLevel.oldest())
        field = pa.field("vector", pa.list_(pa.float32()))

        def batches() -> Iterator[pa.RecordBatch]:
            try:
                for start in range(0, frame.num_rows, BATCH_ROWS):
                    part = frame.slice(start, BATCH_ROWS).combine_chunks().to_batches()[0]
                    vectors = read_rows(self.vectors, self.vector_rows[start : start + part.num_rows], self.width)
                    offsets = pa.array(np.arange(part.num_rows + 1, dtype=np.int32) * self.width)
                    yield part.append_column(field, pa.ListArray.from_arrays(offsets, pa.array(vectors.ravel())))
            finally:
                self.scratch.cleanup()

        return pa.RecordBatchReader.from_batches(frame.schema.append(field), batches())


def partition_graph(
    code: str,
    documents: Sequence[lake_files.Location],
    windows: Sequence[lake_files.Location],
    elements: Sequence[lake_files.Location],
    schema: Schema,
    embed: Callable[[list[str]], np.ndarray],
    merge_threshold: float = 0.92,
) -> PartitionGraph:
    """Kùzu's tables for one partition from its inputs' parquet files (documents, windows, extraction
    elements), and its entity rows. Entities are global nodes (id = type|normalised name; names merged by
    embedding similarity, `merge_entities`); the partition owns its documents, windows, mentions, relations
    (which carry the partition) and attributes. An entity's name is its most frequent surface form in the
    partition (the first seen among equals) and its vector its canonical normalised name's; the entity rows'
    `partition` and `mentions` describe this partition's share and are not stored on the global node."""
    scratch = tempfile.TemporaryDirectory(prefix=f"ebm-graph-{code}-")
    folder = Path(scratch.name)
    con = duckdb.connect(
        str(folder / "build.duckdb"),
        config={
            "memory_limit": BUILD_MEMORY,
            "temp_directory": str(folder / "spill"),
            "preserve_insertion_order": False,  # every order that matters is asked for (ORDER BY, the rows' numbers)
        },
    )
    try:
        for table, locations in (("documents", documents), ("windows", windows), ("elements", elements)):
            _ingest(con, table, locations)
        # each distinct subject (and relation object) normalised once, a batch of values at a time
        con.execute("CREATE TABLE norms (value VARCHAR, norm VARCHAR)")
        reading = con.cursor()  # reads the values while `con` inserts their normalised forms
        values = reading.sql(
            "SELECT DISTINCT subject FROM elements WHERE subject IS NOT NULL UNION "
            "SELECT DISTINCT object FROM elements WHERE kind = 'relation' AND object IS NOT NULL"
        )
        for batch in values.to_arrow_reader(BATCH_ROWS):
            texts = batch.column(0).to_pylist()
            _insert(con, "norms", pa.table({"value": texts, "norm": [normalise(t) for t in texts]}))
        reading.close()
        keys = (
            con.sql(
                "SELECT DISTINCT e.subject_type AS type, n.norm FROM elements e JOIN norms n ON e.subject = n.value "
                "WHERE e.kind = 'entity' AND e.subject_type IS NOT NULL AND n.norm <> ''"
            )
            .pl()
            .sort("type", "norm")
        )
        # every distinct name embedded once, a chunk at a time (the encoder's own), into the vectors file
        names = keys["norm"].unique().sort().to_list()
        width = 0
        with open(folder / "vectors.f32", "wb") as out:
            for start in range(0, len(names), EMBED_CHUNK):
                block = np.ascontiguousarray(embed(names[start : start + EMBED_CHUNK]), dtype=np.float32)
                width = block.shape[1]
                out.write(block.tobytes())
        row_of = {name: i for i, name in enumerate(names)}
        del names

        def vectors_of(batch: list[str]) -> np.ndarray:
            return read_rows(folder / "vectors.f32", [row_of[n] for n in batch], width)

        canonical = merge_entities(list(keys.iter_rows()), vectors_of, merge_threshold)
        del keys
        con.execute("CREATE TABLE ids (type VARCHAR, norm VARCHAR, eid VARCHAR)")
        _insert(
            con,
            "ids",
            pa.table(
                {
                    "type": [t for t, _ in canonical],
                    "norm": [n for _, n in canonical],
                    "eid": [f"{t}|{n}" for t, n in canonical.values()],
                }
            ),
        )
        del canonical
        con.execute(
            "CREATE TABLE mentions AS SELECT e.row, e.window_id, e.subject, s.eid FROM elements e "
            + _ENTITY_OF.format(side="s", column="subject")
            + " WHERE e.kind = 'entity'"
        )
        surface = con.sql(
            "SELECT eid AS id, first(subject ORDER BY n DESC, first) AS name, sum(n)::BIGINT AS mentions FROM "
            "(SELECT eid, subject, count(*) AS n, min(row) AS first FROM mentions GROUP BY ALL) GROUP BY eid"
        ).pl()
        split = pl.col("id").str.splitn("|", 2)
        entities = surface.select(
            "id",
            "name",
            norm=split.struct.field("field_1"),
            type=split.struct.field("field_0"),
            pico_core=split.struct.field("field_0").is_in(list(schema.pico_core)),
            partition=pl.lit(code),
            mentions="mentions",
        ).sort("id")
        del surface
        con.execute("CREATE TABLE entities (id VARCHAR, name VARCHAR)")
        _insert(con, "entities", entities.select("id", "name").to_arrow())
        con.execute(
            "CREATE TABLE attributes AS SELECT e.row, s.eid AS source, e.predicate, e.object, e.window_id, "
            f"{_literal(code + '|')} || left(sha1(s.eid || '|' || e.predicate || '|' || e.object), 16) AS aid "
            "FROM elements e "
            + _ENTITY_OF.format(side="s", column="subject")
            + " WHERE e.kind NOT IN ('entity', 'relation')"
        )
        files, rows = {}, {}
        for table, query in _TABLES.items():
            files[table] = folder / f"{table}.parquet"
            sql = query.format(code=_literal(code), prefix=_literal(code + "|"))
            rows[table] = con.execute(
                f"COPY ({sql}) TO {_literal(str(files[table]))} (FORMAT parquet, ROW_GROUP_SIZE {BATCH_ROWS})"
            ).fetchone()[0]
        relations = con.execute(
            f"SELECT type, count(*) FROM read_parquet({_literal(str(files['RELATES']))}) GROUP BY type"
        ).fetchall()
        mentions = con.execute("SELECT count(*) FROM elements WHERE kind = 'entity'").fetchone()[0]
    finally:
        con.close()
    (folder / "build.duckdb").unlink()
    return PartitionGraph(
        scratch,
        files,
        rows,
        entities,
        np.array([row_of[n] for n in entities["norm"]], dtype=np.int64),
        width,
        dict(relations),
        mentions,
    )


def _literal(text: str) -> str:
    """`text` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def graph_stats(entities: pl.DataFrame, relations_by_type: dict[str, int], attributes: int, schema: Schema) -> dict:
    """Counts by node and relation type, and the PICO-core shares beside the paper's figures."""
    by_type = dict(Counter(entities["type"].to_list())) if entities.height else {}
    core = {t: by_type.get(t, 0) for t in schema.pico_core}
    core_total = sum(core.values())
    nodes_total = entities.height + attributes
    return {
        "entities": entities.height,
        "attributes": attributes,
        "relations": sum(relations_by_type.values()),
        "nodes_by_type": dict(sorted(by_type.items())),
        "relations_by_type": dict(sorted(relations_by_type.items())),
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
