"""LanceDB window index: vectors + native full-text index, one table, per-partition replace.

Each row carries everything the query path reads about a window, computed in one forward pass of
the embedder at index time (`Encoder.encode_windows`): the sentence embedding `vector`, the
window's token embeddings `token_vectors` (float16, for MaxSim), and the spans and pooled vectors
of its quotable sentences (for the extractive answer). `encoder` names the model, backend and
precision that produced them; a window already indexed by the same encoder (same window id: the
id hashes the window's document and text) is copied, not embedded again.

A partition is replaced by one `merge_insert` commit (match on `key` = condition|window_id,
delete the partition's rows that are no longer present), so readers see the old partition or
the new one, never a mixture; LanceDB's versioned commits make an interrupted write invisible.
The full-text index is rebuilt after that commit; until then (or after a writer was killed in
between) full-text queries also scan the rows it does not cover yet, so they stay exact, and the
next write repairs an index a killed first write never built. Once many small fragments have piled
up, a write merges them and removes versions older than the keep window (readers hold a version
while they work).

`search_text` (title, section path and window text: what the dense channel embeds, `index_text`)
carries LanceDB's native BM25 index with English stemming and stop words (`full_text`); the query
path's full-text channel is bm25s over the same column (retrieval/full_text.py), which ranked the
same windows 0.035 MRR higher on Evidence Inference validation; `full_text` stays as the
benchmark's comparison and the readiness check.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import uuid
import warnings
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import lancedb
import numpy as np
import polars as pl
import pyarrow as pa

from ebm_platform.corpus.windows import sentence_spans
from ebm_platform.index.embeddings import Encoder
from ebm_platform.lake_files import Location, files, is_uri, join
from ebm_platform.vectors import unit_rows

TABLE = "windows"
COLUMNS = ("key", "window_id", "condition", "doc_id", "grade", "title", "year", "section", "text")
ENCODED = ("vector", "token_vectors", "sentence_starts", "sentence_ends", "sentence_vectors", "encoder")
SEARCH_TEXT = "search_text"
ENCODE_BATCH = 256  # windows per encode call (progress is reported per batch)
COMPACT_AFTER = 32  # small fragments a table may hold before a write merges them


def index_text(title: str, section: str | None, text: str) -> tuple[str, int]:
    """What the dense channel embeds (title, section path, window text) and where the text starts."""
    prefix = f"{title}. {section or ''}. "
    return prefix + text, len(prefix)


SEARCH_TEXT_SQL = "concat(title, '. ', section, '. ', text)"  # index_text in SQL, for tables that predate the column


def _multivectors(arrays: list[np.ndarray], dim: int) -> pa.Array:
    """list<fixed_size_list<float16, dim>> from one (n_i, dim) array per row."""
    flat = np.concatenate([a.reshape(-1, dim) for a in arrays]) if arrays else np.zeros((0, dim), np.float16)
    offsets = np.concatenate([[0], np.cumsum([len(a) for a in arrays])]).astype(np.int32)
    inner = pa.FixedSizeListArray.from_arrays(pa.array(flat.astype(np.float16).reshape(-1), type=pa.float16()), dim)
    return pa.ListArray.from_arrays(pa.array(offsets), inner)


def multivector_rows(column: pa.ChunkedArray | pa.Array, dim: int) -> list[np.ndarray]:
    """The inverse of `_multivectors`: one float16 (n_i, dim) array per row."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    flat = array.flatten().flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
    lengths = array.value_lengths().to_numpy(zero_copy_only=False)
    return np.split(flat, np.cumsum(lengths)[:-1]) if len(lengths) else []


def encoded_schema(dim: int) -> dict[str, pa.DataType]:
    """Arrow types of the ENCODED columns."""
    vectors = pa.list_(pa.list_(pa.float16(), dim))
    return {
        "vector": pa.list_(pa.float32(), dim),
        "token_vectors": vectors,
        "sentence_starts": pa.list_(pa.int32()),
        "sentence_ends": pa.list_(pa.int32()),
        "sentence_vectors": vectors,
        "encoder": pa.string(),
    }


def encode_rows(windows: pl.DataFrame, encoder: Encoder) -> pa.Table:
    """The ENCODED columns of `windows` (in order), from one forward pass per window."""
    texts, spans, shifted, prefixes = [], [], [], []
    for title, section, text in windows.select("title", "section", "text").iter_rows():
        full, offset = index_text(title, section, text)
        texts.append(full)
        prefixes.append(offset)
        spans.append(sentence_spans(text))
        shifted.append([(a + offset, b + offset) for a, b in spans[-1]])
    encoded = encoder.encode_windows(texts, shifted, prefixes)
    dim = encoder.dim
    vectors = np.stack([e.vector for e in encoded]) if encoded else np.zeros((0, dim), np.float32)
    return pa.Table.from_pydict(
        {
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), type=pa.float32()), dim),
            "token_vectors": _multivectors([e.tokens for e in encoded], dim),
            "sentence_starts": pa.array([[a for a, _ in s] for s in spans], type=pa.list_(pa.int32())),
            "sentence_ends": pa.array([[b for _, b in s] for s in spans], type=pa.list_(pa.int32())),
            "sentence_vectors": _multivectors([e.sentence_vectors for e in encoded], dim),
            "encoder": pa.array([encoder.description] * len(encoded), type=pa.string()),
        }
    ).cast(pa.schema(encoded_schema(dim).items()))


def sql_literal(value: str) -> str:
    """`value` as a quoted SQL string literal (LanceDB filters)."""
    return "'" + value.replace("'", "''") + "'"


def _in(column: str, values) -> str:
    """A SQL `column IN (...)` filter over quoted values."""
    return f"{column} IN ({', '.join(sql_literal(v) for v in values)})"


def remove_stale_staging(folder: Path) -> None:
    """Delete the staging files of writers that died (their process id is gone)."""
    for stale in folder.glob(".staging*.arrow"):
        parts = stale.name.split(".")
        try:
            os.kill(int(parts[-3]), 0)
        except (ValueError, IndexError, ProcessLookupError):
            stale.unlink(missing_ok=True)
        except PermissionError:  # alive, another user's
            continue


class UnreadableTableError(RuntimeError):
    """The window table has committed versions but cannot be opened: it is never overwritten."""


class WindowIndex:
    """The evidence-window table of one lake, in a local folder or at an object-store URI (s3://...,
    which LanceDB reads and writes natively; credentials and endpoint from the provider's standard
    environment, e.g. AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL). `pinned`: every read sees the table
    version of the first read (a query path's several reads then come from one snapshot while a
    writer commits); otherwise each read opens the latest version. A writer's staging file and
    commit lock live beside a local table, and for a URI in a local work folder (one per URI under
    the temporary directory): the lock then serialises the commits of one host, and LanceDB's
    conditional commits those of several."""

    def __init__(self, path: Location, pinned: bool = False) -> None:
        self.path: Location = str(path) if is_uri(path) else Path(path)
        self.db = lancedb.connect(str(self.path))
        self.work = (
            Path(tempfile.gettempdir()) / f"ebm-lancedb-{hashlib.sha256(self.path.encode()).hexdigest()[:12]}"
            if isinstance(self.path, str)
            else self.path
        )
        self.pinned = pinned
        self._snapshot = None
        self._memory: tuple[pl.DataFrame, np.ndarray] | None = None

    def exists(self) -> bool:
        return self._snapshot is not None or TABLE in self.db.table_names()

    def table(self):
        if self._snapshot is not None:
            return self._snapshot
        if not self.exists():
            raise FileNotFoundError(f"no window index at {self.path}: materialise window_index first")
        try:
            table = self.db.open_table(TABLE)  # without a read-consistency interval it stays at this version
        except ValueError as error:
            if versions := self.committed_versions():  # a table with data that cannot be opened: never absent
                raise UnreadableTableError(
                    f"the window table at {self.path} has {versions} committed versions but cannot "
                    f"be opened ({error}): it is left as it is; restore it, or remove it (make clean) to rebuild"
                ) from error
            raise FileNotFoundError(  # listed while another process writes its first commit, or that writer died
                f"the window table at {self.path} has no committed version yet (being created, "
                "or its creation was interrupted): materialise window_index"
            ) from error
        if self.pinned:
            self._snapshot = table
        return table

    def committed_versions(self) -> int:
        """How many committed versions (manifests) the window table has on disk."""
        return len(files(join(self.path, f"{TABLE}.lance", "_versions"), ".manifest"))

    def stored_encodings(self, window_ids: list[str], encoder: str) -> pa.Table:
        """ENCODED columns (plus window_id) of the given windows already indexed by `encoder`."""
        if not self.exists() or not window_ids:
            return pa.table({})
        try:
            table = self.table()
        except FileNotFoundError:  # another partition's writer is creating the table: nothing to copy yet
            return pa.table({})
        if "encoder" not in table.schema.names:
            return pa.table({})
        found = (
            table.search()
            .where(f"{_in('window_id', window_ids)} AND encoder = {sql_literal(encoder)}")
            .select(["window_id", *ENCODED])
            .limit(len(window_ids) * 25)
            .to_arrow()
        )
        ids = found["window_id"].to_pylist()
        first = sorted({w: i for i, w in reversed(list(enumerate(ids)))}.values())
        return found.take(pa.array(first, pa.int64()))

    def text_index_problems(self) -> list[str]:
        """Why full-text queries cannot run (no table, or no index over `search_text`); empty when they can."""
        if not self.exists():
            return [f"no window table at {self.path}"]
        table = self.table()
        if SEARCH_TEXT not in table.schema.names or not any(
            c.index_type == "FTS" and list(c.columns) == [SEARCH_TEXT] for c in table.list_indices()
        ):
            return ["the full-text index is missing"]
        return []

    def replace_partition(
        self,
        condition: str,
        windows: pl.DataFrame,
        encoder: Encoder,
        progress: Callable[[str], None] | None = None,
        keep_versions: timedelta = timedelta(hours=1),
    ) -> dict[str, int]:
        """Replace one condition's rows in one commit and rebuild the full-text index. Rows are
        prepared batch by batch (windows this encoder already indexed, in any partition, are
        copied; the rest encoded) into an Arrow staging file in the work folder, which is then
        streamed into that one commit: memory stays bounded however large the partition. Only the
        commit holds the table's writer lock: another partition's writer encodes meanwhile."""
        data = windows.select(
            (pl.lit(condition) + "|" + pl.col("window_id")).alias("key"),
            "window_id",
            pl.lit(condition).alias("condition"),
            "doc_id",
            "grade",
            "title",
            pl.col("year").cast(pl.Int64),
            pl.col("section").fill_null(""),
            "text",
        )
        data = data.with_columns(
            pl.concat_str(pl.col("title").fill_null(""), pl.lit(". "), "section", pl.lit(". "), "text").alias(
                SEARCH_TEXT
            )
        )
        counts = {"written": data.height, "encoded": 0, "reused": 0, "compacted": 0}
        if not data.height and not self.exists():
            return counts
        schema = data.head(0).to_arrow().schema
        for name, type_ in encoded_schema(encoder.dim).items():
            schema = schema.append(pa.field(name, type_))

        self.work.mkdir(parents=True, exist_ok=True)
        remove_stale_staging(self.work)
        staging = self.work / f".staging.{condition}.{os.getpid()}.{uuid.uuid4().hex}.arrow"
        try:
            with pa.OSFile(str(staging), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
                for start in range(0, data.height, ENCODE_BATCH):
                    batch = data.slice(start, ENCODE_BATCH)
                    writer.write_table(self._encoded_batch(batch, encoder, counts).cast(schema))
                    if progress:
                        progress(
                            f"{condition}: {start + batch.height}/{data.height} windows indexed "
                            f"({counts['encoded']} encoded, {counts['reused']} reused)"
                        )
            with open(self.work / ".writer.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # one commit per table, whichever process or instance runs it
                # read, not memory-mapped: a mapped file's pages count as the process's resident memory (the
                # 982-article lake's 6 GB staging file took its commit to 8.5 GB; a 1.2 GB file into a new
                # table: 1,427 MiB mapped, 455 MiB read)
                with pa.OSFile(str(staging), "rb") as source:
                    staged = pa.ipc.open_file(source)
                    reader = pa.RecordBatchReader.from_batches(
                        schema, (staged.get_batch(i) for i in range(staged.num_record_batches))
                    )
                    try:
                        self._add_search_text()
                    except FileNotFoundError as absent:  # no table, or a creation killed before its first commit
                        if self.committed_versions():
                            raise UnreadableTableError(
                                f"refusing to overwrite the committed window table at {self.path}"
                            ) from absent
                        self.db.create_table(TABLE, reader, mode="overwrite" if self.exists() else "create")
                    else:
                        table = self.table()
                        if table.count_rows(f"condition = {sql_literal(condition)}"):
                            (  # holds the whole partition in memory (about 2.3x its staging file)
                                table.merge_insert("key")
                                .when_matched_update_all()
                                .when_not_matched_insert_all()
                                .when_not_matched_by_source_delete(f"condition = {sql_literal(condition)}")
                                .execute(reader)
                            )
                        else:  # a partition's first rows: an append, which streams (1.2 GB: 419 MiB, merged 2,758)
                            table.add(reader)
                self.rebuild_text_index()
                counts["compacted"] = int(self.compact(keep_versions))
        finally:
            staging.unlink(missing_ok=True)
        return counts

    def compact(self, keep_versions: timedelta) -> bool:
        """Once more than COMPACT_AFTER small fragments have piled up, merge them and delete table
        versions older than `keep_versions` (LanceDB's optimize; its separate prune and merge need the
        pylance package). Not on every write: a merge rewrites the table while the versions it
        replaces must stay for the window, which multiplied the demo's storage. True when it ran."""
        table = self.table()
        if table.stats()["fragment_stats"]["num_small_fragments"] <= COMPACT_AFTER:
            return False
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table.optimize(cleanup_older_than=keep_versions)
        return True

    def _encoded_batch(self, batch: pl.DataFrame, encoder: Encoder, counts: dict[str, int]) -> pa.Table:
        """One batch of rows with its ENCODED columns: copied when stored by this encoder, else encoded."""
        ids = batch["window_id"].to_list()
        stored = self.stored_encodings(ids, encoder.description)
        reused = set(stored["window_id"].to_pylist()) if stored.num_rows else set()
        todo = batch.filter(~pl.col("window_id").is_in(sorted(reused)))
        fresh = encode_rows(todo, encoder).append_column("window_id", todo["window_id"].to_arrow())
        both = pa.concat_tables([p.select(["window_id", *ENCODED]) for p in (stored, fresh) if p.num_rows])
        position = {w: i for i, w in enumerate(both["window_id"].to_pylist())}
        both = both.take(pa.array([position[w] for w in ids], pa.int64()))
        table = batch.to_arrow()
        for name in ENCODED:
            table = table.append_column(name, both[name])
        counts["encoded"] += todo.height
        counts["reused"] += len(reused)
        return table

    def _add_search_text(self) -> None:
        """Give a table that predates `search_text` the column, computed from its own rows."""
        table = self.table()
        if SEARCH_TEXT not in table.schema.names:
            table.add_columns({SEARCH_TEXT: SEARCH_TEXT_SQL})

    def rebuild_text_index(self) -> None:
        """(Re)build the BM25 index over `search_text`, adding the column to a table that predates it
        and dropping full-text indices on other columns."""
        self._add_search_text()
        table = self.table()
        for config in table.list_indices():
            if config.index_type == "FTS" and list(config.columns) != [SEARCH_TEXT]:
                table.drop_index(config.name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table.create_fts_index(SEARCH_TEXT, replace=True, stem=True, remove_stop_words=True, language="English")

    def count(self, condition: str | None = None) -> int:
        if not self.exists():
            return 0
        return self.table().count_rows(f"condition = {sql_literal(condition)}" if condition else None)

    @staticmethod
    def _where(conditions: list[str] | None, grades: tuple[str, ...] | None) -> str | None:
        parts = []
        if conditions:
            parts.append(_in("condition", conditions))
        if grades:
            parts.append(_in("grade", grades))
        return " AND ".join(parts) or None

    def in_memory(self) -> tuple[pl.DataFrame, np.ndarray]:
        """A pinned snapshot's rows (COLUMNS and `vector`) and their unit vectors, read once: its exact
        cosine scans and row lookups then run in memory (LanceDB's flat scan took 27-54 ms per query on
        the demo's 7,580 windows, the matrix product 0.5 ms; the rows take about 2 KB per window, the
        token embeddings stay on disk). Only for a pinned index, whose table cannot change under it."""
        if self._memory is None:
            table = self.table()
            frame = pl.from_arrow(table.search().select([*COLUMNS, "vector"]).limit(table.count_rows()).to_arrow())
            # sorted: the table's row order follows the order the partitions' runs committed, and the dense
            # scan breaks ties by row
            frame = frame.sort("key")
            self._memory = frame, unit_rows(frame["vector"].to_numpy().astype(np.float32).reshape(frame.height, -1))
        return self._memory

    def _mask(self, frame: pl.DataFrame, conditions: list[str] | None, grades: tuple[str, ...] | None) -> np.ndarray:
        """The rows of the given conditions and grades (every row when neither is given)."""
        keep = pl.lit(True)
        if conditions:
            keep = keep & pl.col("condition").is_in(list(conditions))
        if grades:
            keep = keep & pl.col("grade").is_in(list(grades))
        return frame.select(keep.alias("keep"))["keep"].to_numpy()

    def dense(
        self, vector: np.ndarray, limit: int, conditions: list[str] | None = None, grades: tuple[str, ...] | None = None
    ) -> pl.DataFrame:
        """Nearest windows by cosine similarity (exact scan; columns `vector`, `similarity`): in memory
        for a pinned index (`in_memory`), else LanceDB's flat scan."""
        if self.pinned:
            frame, vectors = self.in_memory()
            query = vector.astype(np.float32) / (np.linalg.norm(vector) or 1.0)
            similarity = np.where(self._mask(frame, conditions, grades), vectors @ query, -np.inf)
            chosen = [i for i in np.argsort(-similarity, kind="stable")[:limit] if np.isfinite(similarity[i])]
            return frame[chosen].with_columns(pl.Series("similarity", similarity[chosen], dtype=pl.Float32))
        query = self.table().search(vector.astype(np.float32), vector_column_name="vector").distance_type("cosine")
        where = self._where(conditions, grades)
        if where:
            query = query.where(where, prefilter=True)
        frame = pl.from_arrow(query.limit(limit).select([*COLUMNS, "vector", "_distance"]).to_arrow())
        return frame.with_columns((1 - pl.col("_distance")).alias("similarity")).drop("_distance")

    def full_text(
        self, text: str, limit: int, conditions: list[str] | None = None, grades: tuple[str, ...] | None = None
    ) -> pl.DataFrame:
        """BM25 over the native full-text index of `search_text` (columns `vector`, `bm25`)."""
        table = self.table()
        if SEARCH_TEXT not in table.schema.names:
            raise RuntimeError(
                f"the window index at {self.path} predates the title+section full-text index: "
                "materialise window_index again (make demo, or the asset in the UI)"
            )
        query = table.search(text, query_type="fts", fts_columns=SEARCH_TEXT)
        where = self._where(conditions, grades)
        if where:
            query = query.where(where, prefilter=True)
        frame = pl.from_arrow(query.limit(limit).select([*COLUMNS, "vector", "_score"]).to_arrow())
        return frame.rename({"_score": "bm25"})

    def texts(self) -> list[str]:
        """Every distinct window's text (a window tagged with several conditions counts once)."""
        if self.pinned:
            frame = self.in_memory()[0]
        else:
            table = self.table()
            frame = pl.from_arrow(table.search().select(["window_id", "text"]).limit(table.count_rows()).to_arrow())
        return frame.unique("window_id", keep="first", maintain_order=True)["text"].to_list()

    def rows_for_windows(self, window_ids: list[str], conditions: list[str] | None = None) -> pl.DataFrame:
        """Rows (with vectors) of the given windows, in any (or the given) conditions; none (with the
        same columns) for no windows."""
        if self.pinned:
            frame, _ = self.in_memory()
            keep = pl.col("window_id").is_in(list(window_ids))
            return frame.filter(keep & pl.col("condition").is_in(conditions) if conditions else keep)
        if not window_ids:
            return pl.from_arrow(self.table().schema.empty_table()).select([*COLUMNS, "vector"])
        where = _in("window_id", window_ids)
        if conditions:
            where += f" AND {self._where(conditions, None)}"
        # a window tagged with several conditions has one row per condition
        return pl.from_arrow(
            self.table().search().where(where).select([*COLUMNS, "vector"]).limit(len(window_ids) * 25).to_arrow()
        )

    def rows_for_document(self, doc_id: str) -> pl.DataFrame:
        """Every window of one document (with vectors), each once, in window id order."""
        if self.pinned:
            frame = self.in_memory()[0].filter(pl.col("doc_id") == doc_id)
        else:
            frame = pl.from_arrow(
                self.table()
                .search()
                .where(f"doc_id = {sql_literal(doc_id)}")
                .select([*COLUMNS, "vector"])
                .limit(self.table().count_rows())
                .to_arrow()
            )
        return frame.unique("window_id", keep="first").sort("window_id")

    def late_interaction(self, window_ids: list[str]) -> dict[str, dict]:
        """Per window: token embeddings (float16) and its quotable sentences with their vectors."""
        if not window_ids:
            return {}
        table = self.table()
        if "token_vectors" not in table.schema.names:
            raise RuntimeError(
                f"the window index at {self.path} predates stored token embeddings: "
                "materialise window_index again (make demo, or the asset in the UI)"
            )
        found = (
            table.search()
            .where(_in("window_id", dict.fromkeys(window_ids)))
            .select(["window_id", "text", "token_vectors", "sentence_starts", "sentence_ends", "sentence_vectors"])
            .limit(len(window_ids) * 25)
            .to_arrow()
        )
        dim = table.schema.field("vector").type.list_size
        tokens = multivector_rows(found["token_vectors"], dim)
        sentences = multivector_rows(found["sentence_vectors"], dim)
        out: dict[str, dict] = {}
        for i, (window_id, text, starts, ends) in enumerate(
            zip(
                found["window_id"].to_pylist(),
                found["text"].to_pylist(),
                found["sentence_starts"].to_pylist(),
                found["sentence_ends"].to_pylist(),
            )
        ):
            out.setdefault(
                window_id,
                {
                    "tokens": tokens[i],
                    "sentence_vectors": sentences[i],
                    "sentences": [text[a:b] for a, b in zip(starts, ends)],
                },
            )
        return out
