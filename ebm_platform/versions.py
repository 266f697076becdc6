"""Partition versions shared by two stores. An asset that writes a store (Kùzu, DuckDB) and its
parquet output records the run that wrote them on both sides; a reader that finds the two sides
from different runs (a writer is between its two commits, or was killed there) waits for them to
agree and otherwise says the store is being rebuilt."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import polars as pl
import pyarrow as pa

from ebm_platform import lake_files
from ebm_platform.lake_files import Location

VERSION_KEY = b"ebm_partition_version"
T = TypeVar("T")


class StoreBusyError(RuntimeError):
    """Two stores of one asset disagree: it is being rebuilt (retry) or its last run was killed."""


def write_parquet(data: pl.DataFrame | pa.RecordBatchReader, path: Location, version: str | None = None) -> int:
    """Write a frame whole (`lake_files.write_parquet`) or a reader's batches a row group at a time
    (`lake_files.write_batches`), with `version` in the file's key-value metadata when given; the rows written."""
    if isinstance(data, pa.RecordBatchReader):
        schema = data.schema
        if version is not None:
            schema = schema.with_metadata({**(schema.metadata or {}), VERSION_KEY: version.encode()})
        return lake_files.write_batches(data, path, schema)
    if version is None:
        lake_files.write_parquet(data, path)
        return data.height
    table = data.to_arrow()
    lake_files.write_parquet(
        table.replace_schema_metadata({**(table.schema.metadata or {}), VERSION_KEY: version.encode()}), path
    )
    return data.height


def table_version(table: pa.Table | pa.Schema) -> str | None:
    """The version an Arrow table (or schema) read from parquet was written as (None: without one)."""
    value = ((table if isinstance(table, pa.Schema) else table.schema).metadata or {}).get(VERSION_KEY)
    return value.decode() if value is not None else None


def parquet_version(path: Location) -> str | None:
    """The version a parquet file was written as (None: no file, or written without one)."""
    return table_version(lake_files.read_schema(path)) if lake_files.is_file(path) else None


def mismatched(store_versions: dict[str, str | None], file_versions: dict[str, str | None]) -> list[str]:
    """Partitions whose parquet and store record differ (both absent counts as agreeing: lakes
    written before versions were recorded)."""
    return sorted(p for p in set(file_versions) | set(store_versions) if file_versions.get(p) != store_versions.get(p))


def read_consistent(read: Callable[[], tuple[T, list[str]]], what: str, wait_s: float, poll_s: float = 0.5) -> T:
    """Call `read` (returning a value and what it found inconsistent) until nothing is inconsistent
    or `wait_s` has passed; then raise StoreBusyError saying what."""
    deadline = time.monotonic() + wait_s
    while True:
        value, problems = read()
        if not problems:
            return value
        if time.monotonic() >= deadline:
            raise StoreBusyError(
                f"{what} is being rebuilt ({'; '.join(problems)}): retry when the run finishes; "
                f"if no run is in progress (one was killed), materialise {what} again"
            )
        time.sleep(poll_s)
