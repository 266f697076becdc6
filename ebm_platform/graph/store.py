"""The Kùzu store behind a small adapter (swap `kuzu` for its fork `ladybug` here and only here).

Layout: Document, Window and Attribute nodes carry their partition; Entity nodes are global (one
per type and normalised name, shared by every condition that mentions it); Window -> Document,
Entity -> Window (MENTIONED_IN, the per-partition mentions, each with the name the partition gives
the entity), Entity -> Entity (RELATES, typed, with its partition), Entity -> Attribute. The
knowledge tree adds Community and Keyword nodes.
Every partition write is one transaction: delete the partition's nodes, mentions and relations,
drop entities no partition mentions any more, add the entities that are new, copy the rest,
name each shared entity as the first condition (by code) that mentions it names it, commit, and
record the partition's version (the run that wrote it), which the entity table the graph channel
reads carries too. The names so do not depend on which partition's run committed first.

Writers never touch the live file: a writer (one at a time, under a lock file) copies it, works on
the copy and renames the closed copy over the live file. A crash or an error at any point leaves
the live file as it was; readers (any number, read-only) see the old file or the new one whole and
never wait for a writer, nor a writer for them (Kùzu locks a file it has open).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import kuzu
import polars as pl

DDL = [
    "CREATE NODE TABLE IF NOT EXISTS Document(id STRING PRIMARY KEY, partition STRING, doc_id STRING, "
    "title STRING, grade STRING, year INT64, source STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Window(id STRING PRIMARY KEY, partition STRING, window_id STRING, "
    "doc_id STRING, grade STRING, section STRING, text STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Entity(id STRING PRIMARY KEY, name STRING, norm STRING, type STRING, "
    "pico_core BOOLEAN)",
    "CREATE NODE TABLE IF NOT EXISTS Attribute(id STRING PRIMARY KEY, partition STRING, name STRING, value STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Community(id STRING PRIMARY KEY, name STRING, size INT64, "
    "relation_types STRING[], l2_triples INT64, l1_attributes INT64, summary STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Keyword(id STRING PRIMARY KEY, name STRING)",
    "CREATE NODE TABLE IF NOT EXISTS PartitionVersion(partition STRING PRIMARY KEY, version STRING)",
    "CREATE REL TABLE IF NOT EXISTS FROM_DOCUMENT(FROM Window TO Document)",
    "CREATE REL TABLE IF NOT EXISTS MENTIONED_IN(FROM Entity TO Window, name STRING)",
    "CREATE REL TABLE IF NOT EXISTS RELATES(FROM Entity TO Entity, type STRING, window_id STRING, partition STRING)",
    "CREATE REL TABLE IF NOT EXISTS HAS_ATTRIBUTE(FROM Entity TO Attribute, window_id STRING)",
    "CREATE REL TABLE IF NOT EXISTS IN_COMMUNITY(FROM Entity TO Community)",
    "CREATE REL TABLE IF NOT EXISTS HAS_KEYWORD(FROM Community TO Keyword)",
    "CREATE REL TABLE IF NOT EXISTS KEYWORD_OF(FROM Keyword TO Entity)",
]
PARTITION_NODES = ("Attribute", "Window", "Document")
ENTITY_COLUMNS = ("id", "name", "norm", "type", "pico_core")
TREE_NODES = ("Keyword", "Community")


class GraphStore:
    """A Kùzu database file; open read-only for queries, read-write (on a working copy that replaces
    the file when the store closes without an error) for asset writers."""

    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.work: Path | None = None
        self._lock = None
        if read_only:
            if not self.path.exists():
                raise FileNotFoundError(f"no graph at {self.path}: materialise knowledge_graph first")
            self.db = kuzu.Database(str(self.path), read_only=True)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock = open(self.path.with_name(self.path.name + ".writer.lock"), "w")
            fcntl.flock(self._lock, fcntl.LOCK_EX)  # one writer at a time; the next one waits
            for stale in self.path.parent.glob(f".{self.path.name}.*.work*"):  # left by a killed writer
                stale.unlink()
            self.work = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}.work")
            for suffix in ("", ".wal"):  # a store last written in place may still hold a write-ahead log
                if Path(str(self.path) + suffix).exists():
                    shutil.copyfile(str(self.path) + suffix, str(self.work) + suffix)
            self.db = kuzu.Database(str(self.work))
        self.conn = kuzu.Connection(self.db)
        if not read_only:
            self._drop_outdated_tables()
            for statement in DDL:
                self.conn.execute(statement)

    def _columns(self, table: str) -> set[str]:
        return set(self.conn.execute(f"CALL table_info('{table}') RETURN name").get_as_pl()["name"].to_list())

    def _drop_outdated_tables(self) -> None:
        """A store written before a schema change drops the outdated tables instead of failing to
        copy into them: the tree (rebuilt whole by knowledge_tree) when Community lacks its layer
        counts or summary, and everything (with the partitions' versions) when entities were still per
        partition or mentions did not carry the partition's name for the entity (re-materialise
        knowledge_graph for every partition; the demo and `ebm lake build` do)."""
        tables = self._tables()
        tree = ("IN_COMMUNITY", "HAS_KEYWORD", "KEYWORD_OF", "Community", "Keyword")
        graph = (
            "FROM_DOCUMENT",
            "MENTIONED_IN",
            "RELATES",
            "HAS_ATTRIBUTE",
            "Document",
            "Window",
            "Entity",
            "Attribute",
        )
        drop: tuple[str, ...] = ()
        if ("Entity" in tables and "partition" in self._columns("Entity")) or (
            "MENTIONED_IN" in tables and "name" not in self._columns("MENTIONED_IN")
        ):
            drop = (*tree, *graph, "PartitionVersion")
        elif "Community" in tables and not {"l2_triples", "l1_attributes", "summary"} <= self._columns("Community"):
            drop = tree
        for table in drop:
            if table in tables:
                self.conn.execute(f"DROP TABLE {table}")

    def close(self, commit: bool = True) -> None:
        """Close; a writer's working copy then replaces the live file (`commit`) or is discarded."""
        self.conn.close()
        self.db.close()  # checkpoints the write-ahead log into the file
        if self.work is None:
            return
        try:
            if commit:
                with open(self.work, "rb") as handle:
                    os.fsync(handle.fileno())
                Path(str(self.path) + ".wal").unlink(missing_ok=True)  # folded into the copy at open
                os.replace(self.work, self.path)
        finally:
            for leftover in (self.work, Path(str(self.work) + ".wal")):
                leftover.unlink(missing_ok=True)
            self._lock.close()

    @contextmanager
    def released(self) -> Iterator[None]:
        """The database closed for a while (Kùzu's buffer pool and caches freed; a writer's log folded into its
        working copy) while a writer keeps its lock and working copy: a long computation between a writer's
        reads and its write holds none of Kùzu's memory, and no other writer changes the graph meanwhile."""
        self.conn.close()
        self.db.close()
        try:
            yield
        finally:
            self.db = kuzu.Database(str(self.work or self.path), read_only=self.read_only)
            self.conn = kuzu.Connection(self.db)

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        self.close(commit=exc_type is None)

    def versions(self) -> dict[str, str]:
        """partition -> version of the run that last wrote it."""
        frame = (
            self.query("MATCH (v:PartitionVersion) RETURN v.partition AS partition, v.version AS version")
            if "PartitionVersion" in self._tables()
            else pl.DataFrame()
        )
        return dict(frame.iter_rows()) if frame.height else {}

    def _tables(self) -> set[str]:
        return set(self.conn.execute("CALL show_tables() RETURN name").get_as_pl()["name"].to_list())

    def query(self, cypher: str, params: dict[str, Any] | None = None) -> pl.DataFrame:
        result = self.conn.execute(cypher, params or {})
        return result.get_as_pl()

    def _copy(self, table: str, source: pl.DataFrame | Path) -> None:
        """Copy a frame's rows, or a parquet file's (Kùzu reads it itself, a batch at a time), into `table`."""
        if isinstance(source, pl.DataFrame):
            if source.height:
                self.conn.execute(f"COPY {table} FROM $frame", {"frame": source})
            return
        if "'" in str(source):
            raise ValueError(f"cannot copy {table} from {source}: a quote in the path")
        self.conn.execute(f"COPY {table} FROM '{source}'")

    @contextmanager
    def _transaction(self):
        """BEGIN ... COMMIT; on an error ROLLBACK (unless Kùzu already rolled back) and re-raise it."""
        self.conn.execute("BEGIN TRANSACTION")
        try:
            yield
            self.conn.execute("COMMIT")
        except Exception:
            try:
                self.conn.execute("ROLLBACK")
            except RuntimeError as exc:  # a failed COPY ends the transaction itself
                if "No active transaction" not in str(exc):
                    raise
            raise

    def replace_partition(self, partition: str, tables: Mapping[str, pl.DataFrame | Path], version: str) -> None:
        """Atomically replace one partition's nodes and edges with `tables` (name -> frame or parquet file;
        the Entity table a frame), as `version`."""
        with self._transaction():
            self.conn.execute(
                "MERGE (v:PartitionVersion {partition: $p}) SET v.version = $v", {"p": partition, "v": version}
            )
            before = self.query(
                "MATCH (e:Entity)-[:MENTIONED_IN]->(w:Window) WHERE w.partition = $p RETURN DISTINCT e.id AS id",
                {"p": partition},
            )["id"]
            for node in PARTITION_NODES:
                self.conn.execute(f"MATCH (n:{node}) WHERE n.partition = $p DETACH DELETE n", {"p": partition})
            self.conn.execute(
                "MATCH (:Entity)-[r:RELATES]->(:Entity) WHERE r.partition = $p DELETE r", {"p": partition}
            )
            self.conn.execute(
                "MATCH (e:Entity) WHERE NOT EXISTS { MATCH (e)-[:MENTIONED_IN]->(:Window) } DETACH DELETE e"
            )
            entities = tables.get("Entity", pl.DataFrame())
            new_ids = entities["id"] if entities.height else pl.Series("id", [], pl.String)
            # entities other partitions still mention: the ones this partition mentioned and the ones it adds
            shared = self.query(
                "MATCH (e:Entity) WHERE e.id IN $ids RETURN e.id AS id",
                {"ids": pl.concat([before, new_ids]).unique().sort().to_list()},
            )["id"].to_list()
            if entities.height:
                self._copy("Entity", entities.select(ENTITY_COLUMNS).filter(~pl.col("id").is_in(shared)))
            for table in (
                "Document",
                "Window",
                "Attribute",
                "FROM_DOCUMENT",
                "MENTIONED_IN",
                "RELATES",
                "HAS_ATTRIBUTE",
            ):
                self._copy(table, tables.get(table, pl.DataFrame()))
            self._name_shared(shared)

    def _name_shared(self, ids: list[str]) -> None:
        """Name each of these entities as the first partition (by code) that mentions it names it: the
        same names whichever partition's run committed first, and a partition rebuilt without an entity
        hands its name to the next."""
        names = (
            self.query(
                "MATCH (e:Entity)-[m:MENTIONED_IN]->(w:Window) WHERE e.id IN $ids "
                "RETURN DISTINCT e.id AS id, w.partition AS partition, m.name AS name",
                {"ids": ids},
            )
            .sort("id", "partition", "name")
            .group_by("id", maintain_order=True)
            .agg(pl.col("name").first())
        )
        if names.height:
            self.conn.execute(
                "UNWIND $rows AS r MATCH (e:Entity {id: r.id}) SET e.name = r.name", {"rows": names.to_dicts()}
            )

    def replace_tree(self, tables: dict[str, pl.DataFrame]) -> None:
        """Atomically replace the knowledge tree (communities, keywords and their edges)."""
        with self._transaction():
            for node in TREE_NODES:
                self.conn.execute(f"MATCH (n:{node}) DETACH DELETE n")
            for table in ("Community", "Keyword", "IN_COMMUNITY", "HAS_KEYWORD", "KEYWORD_OF"):
                self._copy(table, tables.get(table, pl.DataFrame()))

    def count(self, cypher: str, params: dict[str, Any] | None = None) -> int:
        frame = self.query(cypher, params)
        return int(frame.item()) if frame.height else 0
