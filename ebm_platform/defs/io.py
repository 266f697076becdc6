"""Parquet IO manager: one file per asset partition under <lake>/assets (or the object store's, see
`LakeLayout.objects`), written whole (a frame) or a row group at a time (a pyarrow RecordBatchReader); an
output whose metadata carries `partition_version` records it in the file (ebm_platform.versions).
An asset marked STAGED is written under <lake>/staging instead and reaches <lake>/assets (where
every downstream asset reads) only when its blocking check promotes it: a failed write leaves the
last good file in place."""

from collections.abc import Sequence
from pathlib import Path

import dagster as dg
import polars as pl
import pyarrow as pa

from ebm_platform import lake_files
from ebm_platform.lake_files import Location
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.process import peak_rss_mb
from ebm_platform.versions import write_parquet

PARTITION_VERSION = "partition_version"  # output metadata: the version the asset's other store recorded
STAGED = "ebm/staged_until_checked"  # asset metadata: written to staging, promoted by its blocking check
# output metadata: the step process's peak resident memory (MiB) since its previous output (process.peak_rss_mb)
PEAK_RSS = "peak_rss_mb"


def step_peak() -> dict[str, dg.MetadataValue]:
    """The step's peak resident memory as output metadata (PEAK_RSS), the peak then reset so that
    the next step this process runs measures its own; empty where /proc does not say."""
    peak = peak_rss_mb(reset=True)
    return {} if peak is None else {PEAK_RSS: dg.MetadataValue.float(peak)}


def asset_file(root: str | Path, asset: str, partition: str | None, staging: bool = False) -> Location:
    """Where the IO manager keeps `asset` (one partition of it): <root>/assets/... or <root>/staging/..."""
    return LakeLayout(root).asset(asset, partition, staging)


def partition_files(root: str | Path, asset: str, partitions: Sequence[str]) -> tuple[list[Location], list[str]]:
    """The files of `asset`'s `partitions` that are materialised, in that order (what `load_input` reads and
    concatenates), and the partitions that are not."""
    missing = [key for key in partitions if not lake_files.is_file(asset_file(root, asset, key))]
    return [asset_file(root, asset, key) for key in partitions if key not in missing], missing


def latest_file(root: str | Path, asset: str, partition: str | None) -> Location:
    """The newest write of a STAGED asset: the staged file awaiting its check, else the promoted one."""
    staged = asset_file(root, asset, partition, staging=True)
    return staged if lake_files.is_file(staged) else asset_file(root, asset, partition)


def promote(root: str | Path, asset: str, partition: str | None) -> bool:
    """Move a checked staged file over the promoted one (one rename); False when nothing was staged."""
    return lake_files.move(asset_file(root, asset, partition, staging=True), asset_file(root, asset, partition))


def model_folder(root: str | Path, name: str, staging: bool = False) -> Path:
    """<root>/models/<name> (what readers load), or <root>/staging/models/<name> for a model that
    waits for its blocking check."""
    return LakeLayout(root).model(name, staging)


def promote_model(root: str | Path, name: str, filename: str) -> bool:
    """Move a checked staged model file over the promoted one (one rename); False when none is staged."""
    return lake_files.move(model_folder(root, name, staging=True) / filename, model_folder(root, name) / filename)


class LakeParquetIOManager(dg.ConfigurableIOManager):
    """Stores Polars frames as <root>/assets/<asset>/<partition>.parquet (or <asset>.parquet) and
    adds the operator's standard metadata to every output: row count, column schema, the file, and
    the step's peak resident memory (`peak_rss_mb`: of its process since the previous output)."""

    root: str

    def handle_output(
        self, context: dg.OutputContext, obj: pl.DataFrame | pa.RecordBatchReader | dict[str, pl.DataFrame]
    ) -> None:
        """One frame per run, or, from a run over a range of partitions, {partition: frame}: one file each.
        A step that never holds its whole output hands a pyarrow RecordBatchReader, written a row group at a time."""
        if obj is None:
            return
        staging = bool(getattr(staged := context.definition_metadata.get(STAGED), "value", staged))
        if isinstance(obj, dict):
            if set(obj) != set(context.asset_partition_keys):
                raise ValueError(
                    f"{context.asset_key.to_user_string()}: frames for {sorted(obj)}, but the run "
                    f"materialises {sorted(context.asset_partition_keys)}"
                )
            frames = obj
        else:
            frames = {context.asset_partition_key if context.has_asset_partitions else None: obj}
        version = context.output_metadata.get(PARTITION_VERSION)
        paths, rows = [], 0
        for partition, frame in frames.items():
            paths.append(path := asset_file(self.root, "/".join(context.asset_key.path), partition, staging=staging))
            rows += write_parquet(
                frame, path, None if version is None else str(getattr(version, "value", version))
            )  # old file or new, never half
        first = next(iter(frames.values()))
        context.add_output_metadata(
            {
                "dagster/row_count": dg.MetadataValue.int(rows),
                "dagster/column_schema": dg.TableSchema(
                    columns=[dg.TableColumn(field.name, str(field.type)) for field in first.schema]
                    if isinstance(first, pa.RecordBatchReader)
                    else [dg.TableColumn(name, str(dtype)) for name, dtype in first.schema.items()]
                ),
                "parquet": dg.MetadataValue.path(str(paths[0] if len(paths) == 1 else lake_files.folder_of(paths[0]))),
                **step_peak(),
            }
        )

    def load_input(self, context: dg.InputContext) -> pl.DataFrame:
        """The asset's parquet (every mapped partition's, concatenated); an input whose definition
        metadata names `columns` reads only those (a global step that counts windows by condition
        need not hold their texts)."""
        name = "/".join(context.asset_key.path)
        columns = (context.definition_metadata or {}).get("columns")
        if not context.has_asset_partitions:
            return lake_files.read_parquet(asset_file(self.root, name, None), columns)
        keys = list(context.asset_partition_keys)
        files, missing = partition_files(self.root, name, keys)
        if missing:  # a partial input is read, but never silently
            context.log.warning(
                f"{context.asset_key.to_user_string()}: {len(missing)} of {len(keys)} partitions not materialised, "
                f"read without them: {', '.join(sorted(missing))}"
            )
        frames = [lake_files.read_parquet(location, columns) for location in files]
        if not frames:
            return pl.DataFrame()
        return pl.concat(frames, how="diagonal_relaxed")
