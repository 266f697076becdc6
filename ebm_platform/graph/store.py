"""The Kùzu store behind a small adapter (swap `kuzu` for its fork `ladybug` here and only here).

Layout: Document, Window, Entity, Attribute nodes carry their partition; Window -> Document,
Entity -> Window (MENTIONED_IN), Entity -> Entity (RELATES, typed), Entity -> Attribute.
The knowledge tree adds Community and Keyword nodes. Every partition write is one transaction:
delete the partition's nodes (and their edges), copy the new ones, commit. A crash before the
commit leaves the previous state, which Kùzu restores from its write-ahead log on open.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kuzu
import polars as pl

DDL = [
    "CREATE NODE TABLE IF NOT EXISTS Document(id STRING PRIMARY KEY, partition STRING, doc_id STRING, "
    "title STRING, grade STRING, year INT64, source STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Window(id STRING PRIMARY KEY, partition STRING, window_id STRING, "
    "doc_id STRING, grade STRING, section STRING, text STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Entity(id STRING PRIMARY KEY, partition STRING, name STRING, "
    "norm STRING, type STRING, pico_core BOOLEAN, mentions INT64)",
    "CREATE NODE TABLE IF NOT EXISTS Attribute(id STRING PRIMARY KEY, partition STRING, name STRING, value STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Community(id STRING PRIMARY KEY, name STRING, size INT64, "
    "relation_types STRING[])",
    "CREATE NODE TABLE IF NOT EXISTS Keyword(id STRING PRIMARY KEY, name STRING)",
    "CREATE REL TABLE IF NOT EXISTS FROM_DOCUMENT(FROM Window TO Document)",
    "CREATE REL TABLE IF NOT EXISTS MENTIONED_IN(FROM Entity TO Window)",
    "CREATE REL TABLE IF NOT EXISTS RELATES(FROM Entity TO Entity, type STRING, window_id STRING)",
    "CREATE REL TABLE IF NOT EXISTS HAS_ATTRIBUTE(FROM Entity TO Attribute, window_id STRING)",
    "CREATE REL TABLE IF NOT EXISTS IN_COMMUNITY(FROM Entity TO Community)",
    "CREATE REL TABLE IF NOT EXISTS HAS_KEYWORD(FROM Community TO Keyword)",
    "CREATE REL TABLE IF NOT EXISTS KEYWORD_OF(FROM Keyword TO Entity)",
]
PARTITION_NODES = ("Attribute", "Entity", "Window", "Document")
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
            for statement in DDL:
                self.conn.execute(statement)

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

    def replace_partition(self, partition: str, tables: dict[str, pl.DataFrame]) -> None:
        """Atomically replace one partition's nodes and edges with `tables` (name -> frame)."""
        self.conn.execute("BEGIN TRANSACTION")
        try:
            for node in PARTITION_NODES:
                self.conn.execute(f"MATCH (n:{node}) WHERE n.partition = $p DETACH DELETE n", {"p": partition})
            for table in ("Document", "Window", "Entity", "Attribute", "FROM_DOCUMENT", "MENTIONED_IN",
                          "RELATES", "HAS_ATTRIBUTE"):
                self._copy(table, tables.get(table, pl.DataFrame()))
            self.conn.execute("COMMIT")
        except Exception:
            self.conn.execute("ROLLBACK")
            raise

    def replace_tree(self, tables: dict[str, pl.DataFrame]) -> None:
        """Atomically replace the knowledge tree (communities, keywords and their edges)."""
        self.conn.execute("BEGIN TRANSACTION")
        try:
            for node in TREE_NODES:
                self.conn.execute(f"MATCH (n:{node}) DETACH DELETE n")
            for table in ("Community", "Keyword", "IN_COMMUNITY", "HAS_KEYWORD", "KEYWORD_OF"):
                self._copy(table, tables.get(table, pl.DataFrame()))
            self.conn.execute("COMMIT")
        except Exception:
            self.conn.execute("ROLLBACK")
            raise

    def count(self, cypher: str, params: dict[str, Any] | None = None) -> int:
        frame = self.query(cypher, params)
        return int(frame.item()) if frame.height else 0
