"""Tag a partition's evidence windows ("title. section. text") with the learned tagger.

The fine-tuned tagger reads each window's text itself. A head over the encoder's token vectors
reuses the window index's stored MiniLM token embeddings and re-runs only the tokenizer for the
offsets; a window the index lacks (or encoded by another model) is encoded here. The word labels
become typed spans (`names.entities`), named with the abbreviations the window's document defines in
any of its windows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ebm_platform.index.embeddings import Encoder
from ebm_platform.index.window_index import WindowIndex, index_text
from ebm_platform.pico.finetuned import FineTunedTagger
from ebm_platform.pico.names import abbreviations, entities, entity_name
from ebm_platform.pico.spans import Words
from ebm_platform.pico.tagger import PicoTagger

BATCH = 256


def tag_windows(
    windows: list[dict],
    tagger: FineTunedTagger | PicoTagger,
    encoder: Encoder,
    index: WindowIndex | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, list[dict]]:
    """window_id -> typed spans (type, text, start, end in the window text, name)."""
    known: dict[str, dict[str, str]] = {}
    for row in windows:
        known.setdefault(row["doc_id"], {}).update(abbreviations(row["text"]))
    out: dict[str, list[dict]] = {}
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
