"""Files of the lake's parquet assets, in a local folder or an object store. A location is a local
path or a URI string (s3://bucket/key, gs://..., az://...); pyarrow's file systems and polars read and
write both, with the object store's credentials and endpoint from the provider's standard
environment (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL, ...). polars and pyarrow are imported when a file
is touched, not with the lake's layout (settings stay quick to import)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ebm_platform.atomic import atomic_path

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa
    import pyarrow.fs as pafs

Location = str | Path


def is_uri(location: Location) -> bool:
    """Whether `location` is a URI (s3://, gs://, file://, ...) rather than a local path."""
    return "://" in str(location)


def join(base: Location, *parts: str) -> Location:
    """`base` followed by `parts` (a Path for a local base, a URI string for a URI)."""
    return "/".join([str(base).rstrip("/"), *parts]) if is_uri(base) else Path(base).joinpath(*parts)


def _filesystem(location: Location) -> tuple[pafs.FileSystem, str]:
    import pyarrow.fs as pafs

    return pafs.FileSystem.from_uri(str(location) if is_uri(location) else str(Path(location).resolve()))


def is_file(location: Location) -> bool:
    if not is_uri(location):
        return Path(location).is_file()
    import pyarrow.fs as pafs

    filesystem, path = _filesystem(location)
    return filesystem.get_file_info(path).type == pafs.FileType.File


def files(folder: Location, suffix: str) -> list[Location]:
    """The files directly in `folder` whose names end with `suffix`, sorted by name (none when the
    folder does not exist)."""
    if not is_uri(folder):
        return sorted(Path(folder).glob(f"*{suffix}"))
    import pyarrow.fs as pafs

    filesystem, path = _filesystem(folder)
    found = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return [join(folder, name) for name in sorted(f.base_name for f in found) if name.endswith(suffix)]


def parquet_files(folder: Location) -> list[Location]:
    return files(folder, ".parquet")


def stem(location: Location) -> str:
    """The file name without its suffix."""
    return PurePosixPath(str(location)).stem


def folder_of(location: Location) -> Location:
    return str(location).rsplit("/", 1)[0] if is_uri(location) else Path(location).parent


def read_parquet(location: Location, columns: list[str] | None = None) -> pl.DataFrame:
    import polars as pl

    return pl.read_parquet(location, columns=columns)


def read_table(location: Location) -> pa.Table:
    import pyarrow.parquet as pq

    filesystem, path = _filesystem(location)
    return pq.read_table(path, filesystem=filesystem)


def iter_batches(location: Location, columns: list[str], rows: int = 4096) -> Iterator[pa.RecordBatch]:
    """The file's `columns` a batch of `rows` at a time, read through a 1 MiB buffer without
    pre-buffering: the process holds about a batch, not a whole column chunk (reading the whole lake's
    entity vectors so held 96 MiB whatever the file's size; pre-buffered, 264 MiB, growing with it)."""
    import pyarrow.parquet as pq

    filesystem, path = _filesystem(location)
    with filesystem.open_input_file(path) as handle:
        yield from pq.ParquetFile(handle, buffer_size=1 << 20, pre_buffer=False).iter_batches(rows, columns=columns)


def read_schema(location: Location) -> pa.Schema:
    import pyarrow.parquet as pq

    filesystem, path = _filesystem(location)
    return pq.read_schema(path, filesystem=filesystem)


def write_parquet(data: pl.DataFrame | pa.Table, location: Location) -> None:
    """Write a frame or an Arrow table (whose schema metadata is kept) so that a reader sees the old
    file or the new one, never half: locally a temporary file renamed over the target (a frame with
    polars' writer), in an object store one upload (a PUT replaces an object whole)."""
    import polars as pl
    import pyarrow.parquet as pq

    if is_uri(location):
        filesystem, path = _filesystem(location)
        pq.write_table(data.to_arrow() if isinstance(data, pl.DataFrame) else data, path, filesystem=filesystem)
        return
    with atomic_path(Path(location)) as tmp:
        if isinstance(data, pl.DataFrame):
            data.write_parquet(tmp)
        else:
            pq.write_table(data, tmp)


def write_batches(batches: pa.RecordBatchReader, location: Location, schema: pa.Schema | None = None) -> int:
    """Write `batches` a row group at a time (as `schema`, `batches`' own with other metadata, when given),
    as `write_parquet` writes a whole table: a reader sees the old file or the new one. The rows written."""
    import pyarrow.parquet as pq

    schema = schema or batches.schema
    rows = 0

    def write(sink: object) -> None:
        nonlocal rows
        with pq.ParquetWriter(sink, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
                rows += batch.num_rows

    if is_uri(location):
        filesystem, path = _filesystem(location)
        with filesystem.open_output_stream(path) as stream:  # the object is replaced when the upload completes
            write(stream)
        return rows
    with atomic_path(Path(location)) as tmp:
        write(tmp)
    return rows


def move(source: Location, target: Location) -> bool:
    """Move `source` over `target` (locally one rename; in an object store a copy, then the source
    deleted); False when there is no `source`."""
    if not is_file(source):
        return False
    if not is_uri(source):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)
        return True
    filesystem, path = _filesystem(source)
    filesystem.move(path, _filesystem(target)[1])
    return True
