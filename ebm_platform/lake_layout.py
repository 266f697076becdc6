"""Every path under a lake, in one place: the landing folder, asset files (promoted and staged),
trained models, the stores (LanceDB, bm25s, Kùzu, BETR), reports, review sheets, the LLM response
cache, the DuckDB warehouse, evaluation lakes and the Dagster log folder.

The parquet assets and the LanceDB store of the lake at EBM_LAKE may live in an object store
instead: EBM_OBJECT_STORE (a URI such as s3://bucket/ebm) puts them at <uri>/assets, <uri>/staging and
<uri>/stores/lancedb (`lake_files` reads and writes either). Everything else (landing, models, Kùzu,
bm25s, DuckDB, reports) stays in the lake folder, and evaluation lakes and lakes at other paths
(the tests') stay local."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ebm_platform.lake_files import Location, join, parquet_files

OBJECT_STORE = "EBM_OBJECT_STORE"  # environment: object-store URI of the lake at EBM_LAKE


@dataclass(frozen=True)
class LakeLayout:
    """The folders and files of the lake at `root`."""

    root: Path

    def __init__(self, root: str | Path) -> None:
        object.__setattr__(self, "root", Path(root))

    @property
    def landing(self) -> Path:
        """Normalised documents per condition: landing/<CODE>/<file>."""
        return self.root / "landing"

    @property
    def objects(self) -> Location:
        """Where the parquet assets and LanceDB live: EBM_OBJECT_STORE for the lake at EBM_LAKE when
        it is set, else the lake folder."""
        uri = os.environ.get(OBJECT_STORE, "").rstrip("/")
        if uri and self.root.resolve() == Path(os.environ.get("EBM_LAKE") or "data_lake").resolve():
            return uri
        return self.root

    def asset_dir(self, staging: bool = False) -> Location:
        """Promoted asset outputs (assets/), or outputs waiting for their blocking check (staging/)."""
        return join(self.objects, "staging" if staging else "assets")

    def asset(self, name: str, partition: str | None = None, staging: bool = False) -> Location:
        """One asset's parquet: assets/<name>/<partition>.parquet, or assets/<name>.parquet unpartitioned."""
        base = self.asset_dir(staging)
        return join(base, name, f"{partition}.parquet") if partition is not None else join(base, f"{name}.parquet")

    def asset_partitions(self, name: str) -> list[Location]:
        """Every promoted partition file of a partitioned asset, sorted by condition code."""
        return parquet_files(join(self.asset_dir(), name))

    def model(self, name: str, staging: bool = False) -> Path:
        """A trained model's folder: models/<name>, or staging/models/<name> until its check passes."""
        return self.root / "staging" / "models" / name if staging else self.root / "models" / name

    @property
    def lancedb(self) -> Location:
        return join(self.objects, "stores", "lancedb")

    @property
    def bm25s(self) -> Path:
        return self.root / "stores" / "bm25s"

    @property
    def graph_db(self) -> Path:
        return self.root / "stores" / "kuzu" / "graph.kz"

    @property
    def pico_spans(self) -> Path:
        """Each partition's tagged window spans (pico.windows.SpanStore), reused by other partitions."""
        return self.root / "stores" / "pico_spans"

    @property
    def betr_parameters(self) -> Path:
        return self.root / "stores" / "betr" / "parameters.json"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def build_memory(self) -> Path:
        """Each build step's peak resident memory in the last full build (runs.record_peaks)."""
        return self.reports / "build_memory.json"

    @property
    def review(self) -> Path:
        return self.root / "review"

    @property
    def llm_cache(self) -> Path:
        return self.root / "cache" / "llm_responses.sqlite"

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse.duckdb"

    @property
    def warehouse_lock(self) -> Path:
        """Held while a partition run writes the warehouse (DuckDB admits one writer process)."""
        return self.root / "warehouse.duckdb.lock"

    @property
    def eval_lakes(self) -> Path:
        """Evaluation lakes, one folder per benchmark and key: eval/<benchmark>-<key>."""
        return self.root / "eval"

    @property
    def dagster(self) -> Path:
        """The Dagster instance's storage and logs when DAGSTER_HOME is the repository."""
        return self.root / ".dagster"
