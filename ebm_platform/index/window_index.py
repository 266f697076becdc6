"""LanceDB window index: vectors + native full-text index, one table, per-partition replace.

A partition is replaced by one `merge_insert` commit (match on `key` = condition|window_id,
delete the partition's rows that are no longer present), so readers see the old partition or
the new one, never a mixture; LanceDB's versioned commits make an interrupted write invisible.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
import polars as pl

TABLE = "windows"
COLUMNS = ("key", "window_id", "condition", "doc_id", "grade", "title", "year", "section", "text")


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class WindowIndex:
    """The evidence-window table of one lake."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.db = lancedb.connect(str(self.path))

    def exists(self) -> bool:
        return TABLE in self.db.table_names()

    def table(self):
        if not self.exists():
            raise FileNotFoundError(f"no window index at {self.path}: materialise window_index first")
        return self.db.open_table(TABLE)

    def replace_partition(self, condition: str, windows: pl.DataFrame, vectors: np.ndarray) -> int:
        """Replace one condition's rows atomically and rebuild the full-text index."""
        data = windows.select(
            (pl.lit(condition) + "|" + pl.col("window_id")).alias("key"), "window_id",
            pl.lit(condition).alias("condition"), "doc_id", "grade", "title", pl.col("year").cast(pl.Int64),
            pl.col("section").fill_null(""), "text").to_arrow()
        dim = vectors.shape[1] if vectors.ndim == 2 and vectors.shape[0] else 384
        vector_col = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), type=pa.float32()), dim)
        data = data.append_column("vector", vector_col)
        if not self.exists():
            if not data.num_rows:
                return 0
            self.db.create_table(TABLE, data)
        else:
            table = self.table()
            (table.merge_insert("key").when_matched_update_all().when_not_matched_insert_all()
             .when_not_matched_by_source_delete(f"condition = {_quote(condition)}").execute(data))
        self.rebuild_text_index()
        return data.num_rows

    def rebuild_text_index(self) -> None:
        table = self.table()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table.create_fts_index("text", replace=True)

    def count(self, condition: str | None = None) -> int:
        if not self.exists():
            return 0
        return self.table().count_rows(f"condition = {_quote(condition)}" if condition else None)

    @staticmethod
    def _where(conditions: list[str] | None, grades: tuple[str, ...] | None) -> str | None:
        parts = []
        if conditions:
            parts.append(f"condition IN ({', '.join(_quote(c) for c in conditions)})")
        if grades:
            parts.append(f"grade IN ({', '.join(_quote(g) for g in grades)})")
        return " AND ".join(parts) or None

    def dense(self, vector: np.ndarray, limit: int, conditions: list[str] | None = None,
              grades: tuple[str, ...] | None = None) -> pl.DataFrame:
        """Nearest windows by cosine similarity (exact scan; columns `vector`, `similarity`)."""
        query = self.table().search(vector.astype(np.float32)).distance_type("cosine")
        where = self._where(conditions, grades)
        if where:
            query = query.where(where, prefilter=True)
        frame = pl.from_arrow(query.limit(limit).select([*COLUMNS, "vector", "_distance"]).to_arrow())
        return frame.with_columns((1 - pl.col("_distance")).alias("similarity")).drop("_distance")

    def full_text(self, text: str, limit: int, conditions: list[str] | None = None,
                  grades: tuple[str, ...] | None = None) -> pl.DataFrame:
        """BM25 over the native full-text index (columns `vector`, `bm25`)."""
        query = self.table().search(text, query_type="fts")
        where = self._where(conditions, grades)
        if where:
            query = query.where(where, prefilter=True)
        frame = pl.from_arrow(query.limit(limit).select([*COLUMNS, "vector", "_score"]).to_arrow())
        return frame.rename({"_score": "bm25"})

    def texts(self) -> list[str]:
        """Every distinct window's text (a window tagged with several conditions counts once)."""
        table = self.table()
        frame = pl.from_arrow(table.search().select(["window_id", "text"]).limit(table.count_rows()).to_arrow())
        return frame.unique("window_id", keep="first")["text"].to_list()

    def rows_for_windows(self, window_ids: list[str], conditions: list[str] | None = None) -> pl.DataFrame:
        """Rows (with vectors) of the given windows, in any (or the given) conditions."""
        if not window_ids:
            return pl.DataFrame()
        where = f"window_id IN ({', '.join(_quote(w) for w in window_ids)})"
        if conditions:
            where += f" AND {self._where(conditions, None)}"
        # a window tagged with several conditions has one row per condition
        return pl.from_arrow(self.table().search().where(where).limit(len(window_ids) * 25).to_arrow())
