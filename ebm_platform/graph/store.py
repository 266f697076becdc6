"""The Kùzu store behind a small adapter (swap `kuzu` for its fork `ladybug` here and only here).

Layout: Document, Window and Attribute nodes carry their partition; Entity nodes are global (one
per type and normalised name, shared by every condition that mentions it); Window -> Document,
Entity -> Window (MENTIONED_IN, the per-partition mentions), Entity -> Entity (RELATES, typed,
with its partition), Entity -> Attribute. The knowledge tree adds Community and Keyword nodes.
Every partition write is one transaction: delete the partition's nodes, mentions and relations,
drop entities no partition mentions any more, add the entities that are new, copy the rest,
commit. A crash before the commit leaves the previous state, which Kùzu restores from its
write-ahead log on open.
"""

from __future__ import annotations

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
    "CREATE REL TABLE IF NOT EXISTS FROM_DOCUMENT(FROM Window TO Document)",
    "CREATE REL TABLE IF NOT EXISTS MENTIONED_IN(FROM Entity TO Window)",
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
    """A Kùzu database folder; open read-only for queries, read-write for asset writers."""

    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = Path(path)
        if read_only and not self.path.exists():
            raise FileNotFoundError(f"no graph at {self.path}: materialise knowledge_graph first")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = kuzu.Database(str(self.path), read_only=read_only)
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
        counts or summary, and everything when entities were still per partition (re-materialise
        knowledge_graph for every partition; the demo and `ebm lake build` do)."""
        tables = set(self.conn.execute("CALL show_tables() RETURN name").get_as_pl()["name"].to_list())
        tree = ("IN_COMMUNITY", "HAS_KEYWORD", "KEYWORD_OF", "Community", "Keyword")
        graph = ("FROM_DOCUMENT", "MENTIONED_IN", "RELATES", "HAS_ATTRIBUTE", "Document", "Window", "Entity",
                 "Attribute")
        drop: tuple[str, ...] = ()
        if "Entity" in tables and "partition" in self._columns("Entity"):
            drop = tree + graph
        elif "Community" in tables and not {"l2_triples", "l1_attributes", "summary"} <= self._columns("Community"):
            drop = tree
        for table in drop:
            if table in tables:
                self.conn.execute(f"DROP TABLE {table}")

    def close(self) -> None:
        self.conn.close()
        self.db.close()

    def __enter__(self) -> "GraphStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def query(self, cypher: str, params: dict[str, Any] | None = None) -> pl.DataFrame:
        result = self.conn.execute(cypher, params or {})
        return result.get_as_pl()

    def _copy(self, table: str, frame: pl.DataFrame) -> None:
        if frame.height:
            self.conn.execute(f"COPY {table} FROM $frame", {"frame": frame})

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

    def replace_partition(self, partition: str, tables: dict[str, pl.DataFrame]) -> None:
        """Atomically replace one partition's nodes and edges with `tables` (name -> frame)."""
        with self._transaction():
            for node in PARTITION_NODES:
                self.conn.execute(f"MATCH (n:{node}) WHERE n.partition = $p DETACH DELETE n", {"p": partition})
            self.conn.execute("MATCH (:Entity)-[r:RELATES]->(:Entity) WHERE r.partition = $p DELETE r", {"p": partition})
            self.conn.execute("MATCH (e:Entity) WHERE NOT EXISTS { MATCH (e)-[:MENTIONED_IN]->(:Window) } "
                              "DETACH DELETE e")
            entities = tables.get("Entity", pl.DataFrame())
            if entities.height:
                known = set(self.query("MATCH (e:Entity) WHERE e.id IN $ids RETURN e.id AS id",
                                       {"ids": entities["id"].to_list()})["id"].to_list())
                self._copy("Entity", entities.select(ENTITY_COLUMNS).filter(~pl.col("id").is_in(sorted(known))))
            for table in ("Document", "Window", "Attribute", "FROM_DOCUMENT", "MENTIONED_IN", "RELATES",
                          "HAS_ATTRIBUTE"):
                self._copy(table, tables.get(table, pl.DataFrame()))

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
