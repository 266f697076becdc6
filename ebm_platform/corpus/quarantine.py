"""The warehouse's `quarantine` table: files a partition could not admit, and why.

source_documents commits its rows to DuckDB before its parquet is written, so each row carries the
version (run) of the parquet it belongs with, and a partition keeps the rows of its current parquet
until a new parquet replaces it: a reader shows the rows matching the parquet on disk, so a run
killed between the two writes never shows one run's documents with another run's quarantine."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

import duckdb

from ebm_platform.corpus.landing import QuarantineRecord
from ebm_platform.lake_files import Location, join
from ebm_platform.versions import parquet_version, read_consistent

DDL = [
    "CREATE TABLE IF NOT EXISTS quarantine (condition VARCHAR, path VARCHAR, reason VARCHAR, sha256 VARCHAR, "
    "detected_at TIMESTAMP)",
    "ALTER TABLE quarantine ADD COLUMN IF NOT EXISTS version VARCHAR",
]


def record(
    conn: duckdb.DuckDBPyConnection,
    condition: str,
    entries: Iterable[QuarantineRecord],
    version: str,
    current: str | None,
    detected_at: datetime,
) -> None:
    """In one transaction: keep only the rows of the partition's current parquet (`current`), add
    this run's rows as `version`."""
    for statement in DDL:
        conn.execute(statement)
    conn.execute("BEGIN TRANSACTION")
    conn.execute("DELETE FROM quarantine WHERE condition = ? AND version IS DISTINCT FROM ?", [condition, current])
    for q in entries:
        conn.execute(
            "INSERT INTO quarantine VALUES (?, ?, ?, ?, ?, ?)",
            [q.condition, q.path, q.reason, q.sha256, detected_at, version],
        )
    conn.execute("COMMIT")


def current_rows(conn: duckdb.DuckDBPyConnection, documents_dir: Location) -> list[tuple[str, str, str]]:
    """(condition, path, reason) of the rows that belong with each partition's parquet on disk."""
    if not conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'quarantine'").fetchone()[0]:
        return []
    columns = {r[0] for r in conn.execute("DESCRIBE quarantine").fetchall()}
    version = "version" if "version" in columns else "NULL"
    rows = conn.execute(
        f"SELECT condition, path, reason, {version} FROM quarantine ORDER BY condition, path"
    ).fetchall()
    versions = {c: parquet_version(join(documents_dir, f"{c}.parquet")) for c in {r[0] for r in rows}}
    return [(c, p, reason) for c, p, reason, v in rows if v == versions[c]]


def connect_read_only(path: Path, wait_s: float) -> duckdb.DuckDBPyConnection:
    """A read-only connection; while a writer holds the file, wait up to `wait_s`, then say so."""

    def connect() -> tuple[duckdb.DuckDBPyConnection | None, list[str]]:
        try:
            return duckdb.connect(str(path), read_only=True), []
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise
            return None, [f"the warehouse {path} is locked by a run writing it"]

    return read_consistent(connect, "source_documents", wait_s, poll_s=0.25)  # its writer holds the lock
