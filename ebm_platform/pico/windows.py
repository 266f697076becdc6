"""Tag a partition's evidence windows ("title. section. text") with the learned tagger.

The fine-tuned tagger reads each window's text itself. A head over the encoder's token vectors
reuses the window index's stored MiniLM token embeddings and re-runs only the tokenizer for the
offsets; a window the index lacks (or encoded by another model) is encoded here. Entity names are
normalised with the abbreviations its document defines in any of its windows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ebm_platform.index.embeddings import Encoder
from ebm_platform.index.window_index import WindowIndex, index_text
from ebm_platform.pico.finetuned import FineTunedTagger
from ebm_platform.pico.names import abbreviations, entity_name
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
            tagged, missing = tagger.tag_texts(texts), []
        else:
            tagged, missing = _tag_with_stored_tokens(batch, texts, tagger, encoder, index)
        for row, entities in zip(batch, tagged):
            for entity in entities:
                entity["name"] = entity_name(entity["text"], entity["type"], known[row["doc_id"]])
            out[row["window_id"]] = [e for e in entities if e["name"]]
        if progress:
            encoded = f" ({len(missing)} of this batch encoded here)" if missing else ""
            progress(f"tagged {min(start + BATCH, len(windows))}/{len(windows)} windows{encoded}")
    return out


def _tag_with_stored_tokens(
    batch: list[dict], texts: list[tuple[str, int]], tagger: PicoTagger, encoder: Encoder, index: WindowIndex | None
) -> tuple[list[list[dict]], list[int]]:
    """A head's entities of a batch from the index's token vectors (encoding the windows it lacks),
    and which of the batch were encoded here."""
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
    tagged = tagger.tag_encoded(
        [
            (full, tokens, np.asarray(spans, dtype=np.int64).reshape(-1, 2), prefix)
            for full, tokens, spans, prefix in items
        ]
    )
    return tagged, missing
