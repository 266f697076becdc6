"""Tag a partition's evidence windows ("title. section. text") with the learned tagger.

The fine-tuned tagger reads each window's text itself. A head over the encoder's token vectors
reuses the window index's stored MiniLM token embeddings and re-runs only the tokenizer for the
offsets; a window the index lacks (or encoded by another model) is encoded here. The word labels
become typed spans (`names.entities`), named with the abbreviations the window's document defines in
any of its windows.

A window that several conditions share (a review or a guideline in two partitions: 23% of the demo's
window rows) is tagged once: `SpanStore` keeps each partition's spans beside the lake, keyed by the
window's text and the tagger's meta, and a partition takes another's spans for a window whose text
and tagger are the same.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from ebm_platform.abbreviations import abbreviations
from ebm_platform.atomic import atomic_path
from ebm_platform.index.embeddings import Encoder
from ebm_platform.index.window_index import WindowIndex, index_text
from ebm_platform.pico.finetuned import FineTunedTagger
from ebm_platform.pico.names import entities, entity_name
from ebm_platform.pico.spans import Words
from ebm_platform.pico.tagger import PicoTagger

BATCH = 256
SPAN_SCHEMA = {"window_id": pl.String, "text_sha1": pl.String, "tagger": pl.String, "spans": pl.String}


def tag_windows(
    windows: list[dict],
    tagger: FineTunedTagger | PicoTagger,
    encoder: Encoder,
    index: WindowIndex | None = None,
    progress: Callable[[str], None] | None = None,
    reused: Mapping[str, list[dict]] | None = None,
) -> dict[str, list[dict]]:
    """window_id -> typed spans (type, text, start, end in the window text, name); the windows in
    `reused` (SpanStore.reusable) take those spans and are not tagged again."""
    known: dict[str, dict[str, str]] = {}
    for row in windows:
        known.setdefault(row["doc_id"], {}).update(abbreviations(row["text"]))
    reused = reused or {}
    out: dict[str, list[dict]] = {r["window_id"]: reused[r["window_id"]] for r in windows if r["window_id"] in reused}
    windows = [r for r in windows if r["window_id"] not in reused]
    if progress and out:
        progress(f"{len(out)} windows' spans reused from other conditions' tagging")
    for start in range(0, len(windows), BATCH):
        batch = windows[start : start + BATCH]
        texts = [index_text(r["title"], r["section"], r["text"]) for r in batch]
        if isinstance(tagger, FineTunedTagger):
            labelled, missing = tagger.label_texts([t for t, _ in texts]), []
        else:
            labelled, missing = _label_with_stored_tokens(batch, texts, tagger, encoder, index)
        for row, (words, labels), (_, prefix) in zip(batch, labelled, texts):
            spans = entities(words, labels, prefix)
            for entity in spans:
                entity["name"] = entity_name(entity["text"], entity["type"], known[row["doc_id"]])
            out[row["window_id"]] = [e for e in spans if e["name"]]
        if progress:
            encoded = f" ({len(missing)} of this batch encoded here)" if missing else ""
            progress(f"tagged {min(start + BATCH, len(windows))}/{len(windows)} windows{encoded}")
    return out


def tag_texts(tagger: FineTunedTagger | PicoTagger, texts: list[str], encoder: Encoder) -> list[list[dict]]:
    """Typed spans (type, text, start, end) of raw texts."""
    return [entities(words, labels) for words, labels in tagger.label_texts(texts, encoder)]


def _label_with_stored_tokens(
    batch: list[dict], texts: list[tuple[str, int]], tagger: PicoTagger, encoder: Encoder, index: WindowIndex | None
) -> tuple[list[tuple[Words, np.ndarray]], list[int]]:
    """A head's words and word labels of a batch from the index's token vectors (encoding the
    windows it lacks), and which of the batch were encoded here."""
    stored = index.late_interaction([r["window_id"] for r in batch]) if index is not None and index.exists() else {}
    offsets = encoder.tokenizer(
        [t for t, _ in texts], add_special_tokens=False, return_offsets_mapping=True, verbose=False
    )["offset_mapping"]
    items, missing = [], []
    for row, (full, prefix), spans in zip(batch, texts, offsets):
        tokens = stored.get(row["window_id"], {}).get("tokens")
        if tokens is None or len(tokens) != len(spans):
            missing.append(len(items))
        items.append([full, tokens, spans, prefix])
    for k, encoding in zip(
        missing, encoder.encode_windows([items[k][0] for k in missing], prefixes=[items[k][3] for k in missing])
    ):
        items[k][1], items[k][2] = encoding.tokens, encoding.offsets
    labelled = tagger.label_encoded(
        [(full, tokens, np.asarray(spans, dtype=np.int64).reshape(-1, 2)) for full, tokens, spans, _ in items]
    )
    return labelled, missing


class SpanStore:
    """Tagged spans per partition (<lake>/stores/pico_spans/<partition>.parquet: window_id, the sha1 of
    the text the tagger read, the tagger's key and the spans as JSON), written atomically after a
    partition is tagged and read by the partitions tagged after it."""

    def __init__(self, folder: Path, tagger_key: str) -> None:
        self.folder, self.tagger_key = Path(folder), tagger_key

    @staticmethod
    def text_key(row: dict) -> str:
        return hashlib.sha1(index_text(row["title"], row["section"], row["text"])[0].encode()).hexdigest()

    def reusable(self, partition: str, windows: list[dict]) -> dict[str, list[dict]]:
        """Spans another partition stored for these windows, same text, same tagger."""
        wanted = {r["window_id"]: self.text_key(r) for r in windows}
        found: dict[str, list[dict]] = {}
        for path in sorted(self.folder.glob("*.parquet")) if self.folder.is_dir() else []:
            if path.stem == partition:
                continue
            stored = pl.read_parquet(path).filter(
                (pl.col("tagger") == self.tagger_key) & pl.col("window_id").is_in(sorted(set(wanted) - set(found)))
            )
            for window_id, text, spans in stored.select("window_id", "text_sha1", "spans").iter_rows():
                if wanted[window_id] == text:
                    found[window_id] = json.loads(spans)
        return found

    def rows(self, windows: list[dict], tagged: Mapping[str, list[dict]]) -> pl.DataFrame:
        """The store's rows for these windows' spans (JSON: compact beside the spans as Python dicts)."""
        return pl.DataFrame(
            {
                "window_id": [r["window_id"] for r in windows],
                "text_sha1": [self.text_key(r) for r in windows],
                "tagger": [self.tagger_key] * len(windows),
                "spans": [json.dumps(tagged.get(r["window_id"], [])) for r in windows],
            },
            schema=SPAN_SCHEMA,
        )

    @contextmanager
    def writer(self, partition: str) -> Iterator[Callable[[pl.DataFrame], None]]:
        """A function that appends span rows to this partition's file as they come; what it wrote replaces
        what the partition stored before when the block ends without an error (else nothing changes)."""
        with atomic_path(self.folder / f"{partition}.parquet") as tmp:
            schema = pl.DataFrame(schema=SPAN_SCHEMA).to_arrow().schema
            with pq.ParquetWriter(tmp, schema) as out:
                yield lambda rows: out.write_table(rows.to_arrow().cast(schema))

    def write(self, partition: str, rows: pl.DataFrame) -> None:
        """Keep this partition's span rows (replacing what it stored before)."""
        with self.writer(partition) as append:
            append(rows)


class PartitionTagging:
    """Tags one partition's windows a batch at a time (`__call__`, for `Extractor.partition`), taking the spans
    other partitions stored for the same text and tagger; inside `storing`, each batch's span rows go to the
    store as it is tagged (a partition's rows are never held together: 33 MB of JSON at 32,000 windows)."""

    def __init__(
        self,
        store: SpanStore,
        partition: str,
        tagger: FineTunedTagger | PicoTagger,
        encoder: Encoder,
        index: WindowIndex | None = None,
    ) -> None:
        self.store, self.partition, self.tagger, self.encoder, self.index = store, partition, tagger, encoder, index
        self.append: Callable[[pl.DataFrame], None] | None = None
        self.reused = 0

    @contextmanager
    def storing(self) -> Iterator[PartitionTagging]:
        """Tagging that writes each batch's spans to the store, committed when the block ends without an error."""
        with self.store.writer(self.partition) as append:
            self.append = append
            try:
                yield self
            finally:
                self.append = None

    def __call__(self, windows: list[dict]) -> dict[str, list[dict]]:
        if self.append is None:
            raise RuntimeError("a partition is tagged inside PartitionTagging.storing(), which stores its spans")
        reused = self.store.reusable(self.partition, windows)
        tagged = tag_windows(windows, self.tagger, self.encoder, self.index, reused=reused)
        self.append(self.store.rows(windows, tagged))
        self.reused += len(reused)
        return tagged


def tagger_key(tagger: FineTunedTagger | PicoTagger) -> str:
    """A saved tagger's identity for SpanStore: the hash of its meta (training key, weights' provenance)
    and, for the fine-tuned tagger, how it infers (INT8 or not)."""
    identity = {**tagger.meta, "inference": tagger.inference} if isinstance(tagger, FineTunedTagger) else tagger.meta
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:16]
