"""Parquet IO manager: one file per asset partition under <lake>/assets, written atomically; an
output whose metadata carries `partition_version` records it in the file (ebm_platform.versions)."""


from pathlib import Path

import dagster as dg
import polars as pl

from ebm_platform.versions import write_parquet

PARTITION_VERSION = "partition_version"  # output metadata: the version the asset's other store recorded


class LakeParquetIOManager(dg.ConfigurableIOManager):
    """Stores Polars frames as <root>/assets/<asset>/<partition>.parquet (or <asset>.parquet) and
    adds the operator's standard metadata to every output: row count, column schema, the file."""

    root: str

    def _base(self, key: dg.AssetKey) -> Path:
        return Path(self.root, "assets", *key.path)

    def handle_output(self, context: dg.OutputContext, obj: pl.DataFrame) -> None:
        if obj is None:
            return
        base = self._base(context.asset_key)
        path = base / f"{context.asset_partition_key}.parquet" if context.has_asset_partitions else base.with_suffix(".parquet")
        version = context.output_metadata.get(PARTITION_VERSION)
        write_parquet(obj, path, None if version is None else str(getattr(version, "value", version)))  # old file or new, never half
        context.add_output_metadata({
            "dagster/row_count": dg.MetadataValue.int(obj.height),
            "dagster/column_schema": dg.TableSchema(
                columns=[dg.TableColumn(name, str(dtype)) for name, dtype in obj.schema.items()]),
            "parquet": dg.MetadataValue.path(str(path)),
        })

    def load_input(self, context: dg.InputContext) -> pl.DataFrame:
        base = self._base(context.asset_key)
        if not context.has_asset_partitions:
            return pl.read_parquet(base.with_suffix(".parquet"))
        frames = [pl.read_parquet(p) for key in context.asset_partition_keys
                  if (p := base / f"{key}.parquet").exists()]
        if not frames:
            return pl.DataFrame()
        return pl.concat(frames, how="diagonal_relaxed")
