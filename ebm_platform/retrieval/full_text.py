"""The full-text channel: BM25 (bm25s: Snowball English stemmer, English stop words, Lucene
scoring with k1 = 1.5, b = 0.75) over each window's `search_text` (title, section path and text).

LanceDB's native BM25 over the same field ranked the same windows 0.035 MRR below bm25s on
Evidence Inference validation (docs/evaluation.md, "The full-text channel against bm25s"), with the same
stemming and stop words and whatever its tokenizer options, so the query path uses bm25s. The
index is derived data of one window-index version: built from that version's rows on first use,
saved under `<lake>/stores/bm25s/v<version>/` (written to a temporary folder and renamed, so a
reader sees a whole index or none) and loaded memory-mapped by every later query process. Saved
versions are removed once older than EBM_INDEX_KEEP_VERSIONS_MIN, like the table's own versions.
"""

from __future__ import annotations

import shutil
import time
import uuid
from datetime import timedelta
from pathlib import Path

import bm25s
import numpy as np
import polars as pl
import Stemmer

from ebm_platform.index.window_index import SEARCH_TEXT, WindowIndex, sql_literal
from ebm_platform.settings import get_settings

_STEMMER = Stemmer.Stemmer("english")
EMPTY = pl.DataFrame(schema={"window_id": pl.Utf8, "bm25": pl.Float64})


def _tokens(texts: list[str], ids: bool) -> object:
    return bm25s.tokenize(texts, stopwords="en", stemmer=_STEMMER, return_ids=ids, show_progress=False)


def _rows(table, n: int, condition: str | None = None) -> pl.DataFrame:
    """The table's first `n` rows (of one condition when given): what the channel indexes."""
    query = table.search().select(["window_id", "condition", "grade", SEARCH_TEXT])
    if condition:
        query = query.where(f"condition = {sql_literal(condition)}", prefilter=True)
    return pl.from_arrow(query.limit(n).to_arrow())


def _windows(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per window, with every condition it is tagged with."""
    # in window order, not the table's (which follows the partitions' commits): bm25s breaks ties by position
    return (
        rows.sort("window_id", "condition")
        .group_by("window_id", maintain_order=True)
        .agg(pl.col("condition").unique().alias("conditions"), pl.first("grade"), pl.first(SEARCH_TEXT))
    )


def _indexed(rows: pl.DataFrame) -> tuple[pl.DataFrame, bm25s.BM25]:
    """The windows of `rows` and bm25s over their search text."""
    windows = _windows(rows)
    bm25 = bm25s.BM25()
    bm25.index(_tokens(windows[SEARCH_TEXT].to_list(), ids=True), show_progress=False)
    return windows, bm25


class FullTextChannel:
    """bm25s over one window-index snapshot; one document per window (a window tagged with several
    conditions is one document whose conditions all match a filter)."""

    def __init__(self, windows: pl.DataFrame, bm25: bm25s.BM25 | None) -> None:
        self.bm25 = bm25
        self.window_ids = windows["window_id"].to_list()
        self.grades = windows["grade"].to_numpy()
        conditions = windows["conditions"].to_list()
        self.by_condition: dict[str, np.ndarray] = {}
        for i, codes in enumerate(conditions):
            for code in codes:
                self.by_condition.setdefault(code, np.zeros(len(conditions), dtype=bool))[i] = True

    @classmethod
    def open(cls, index: WindowIndex, root: Path, keep: timedelta | None = None) -> FullTextChannel:
        """The channel of `index`'s (pinned) version: loaded from `root` when saved, else built from
        that version's rows and saved. Saved versions older than `keep` (default
        EBM_INDEX_KEEP_VERSIONS_MIN, as for the table's own versions) are removed, but never this one."""
        table = index.table()
        n = table.count_rows()
        if not n:
            return cls.empty()
        folder = Path(root) / f"v{table.version}"
        for _ in range(2):  # a concurrent reader may prune a version between the check and the load
            if not (folder / "windows.parquet").is_file():
                folder.parent.mkdir(parents=True, exist_ok=True)
                cls._build(
                    _rows(table, n),
                    folder,
                    keep if keep is not None else timedelta(minutes=get_settings().index_keep_versions_min),
                )
            try:
                bm25 = bm25s.BM25.load(str(folder), mmap=True, show_progress=False)
                return cls(pl.read_parquet(folder / "windows.parquet"), bm25)
            except FileNotFoundError:
                continue
        raise RuntimeError(f"the full-text index {folder} keeps disappearing: is another process pruning it?")

    @classmethod
    def of_condition(cls, index: WindowIndex, code: str) -> FullTextChannel:
        """An in-memory channel over one condition's windows alone: its statistics (IDF, mean length) do
        not depend on which other conditions a concurrent build has indexed yet, as the whole
        table's would (what a partition run ranks is then the same in every build)."""
        n = index.count(code)
        return cls(*_indexed(_rows(index.table(), n, code))) if n else cls.empty()

    @classmethod
    def empty(cls) -> FullTextChannel:
        """A channel over no windows (it finds nothing)."""
        return cls(pl.DataFrame(schema={"window_id": pl.Utf8, "conditions": pl.List(pl.Utf8), "grade": pl.Utf8}), None)

    @staticmethod
    def _build(rows: pl.DataFrame, folder: Path, keep: timedelta) -> None:
        windows, bm25 = _indexed(rows)
        staging = folder.parent / f".tmp-{uuid.uuid4().hex}"
        bm25.save(str(staging), show_progress=False)
        windows.drop(SEARCH_TEXT).write_parquet(staging / "windows.parquet")  # last: marks the folder whole
        try:
            staging.rename(folder)
        except OSError:  # another reader saved the same version first
            shutil.rmtree(staging, ignore_errors=True)
        cutoff = time.time() - keep.total_seconds()
        for old in [*folder.parent.glob("v*"), *folder.parent.glob(".tmp-*")]:  # (.tmp-: a killed builder's)
            if old != folder and old.stat().st_mtime < cutoff:  # readers hold a version while they work
                shutil.rmtree(old, ignore_errors=True)

    def search(
        self, text: str, limit: int, conditions: list[str] | None = None, grades: tuple[str, ...] | None = None
    ) -> pl.DataFrame:
        """The best `limit` windows for `text` (columns `window_id`, `bm25`), best first; windows
        outside `conditions` / `grades` are masked out, not post-filtered. Their rows are read only
        for the candidates that survive fusion (`pipeline.fill_rows`)."""
        n = len(self.window_ids)
        if not n:
            return EMPTY
        mask = np.ones(n, dtype=bool)
        if conditions:
            mask = np.zeros(n, dtype=bool)
            for code in conditions:
                mask |= self.by_condition.get(code, np.zeros(n, dtype=bool))
        if grades:
            mask &= np.isin(self.grades, list(grades))
        found, scores = self.bm25.retrieve(
            _tokens([text], ids=False), k=min(limit, n), show_progress=False, weight_mask=mask.astype(np.float32)
        )
        kept = scores[0] > 0
        return pl.DataFrame(
            {"window_id": [self.window_ids[i] for i in found[0][kept]], "bm25": scores[0][kept]}, schema=EMPTY.schema
        )
