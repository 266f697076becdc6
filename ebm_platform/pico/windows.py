"""Tag a partition's evidence windows with the learned tagger.

Each window is read as the window index reads it ("title. section. text"), by one forward pass of
the tagger's fine-tuned encoder (its token vectors differ from the bundled model's that the index
stores for MaxSim); entities are kept from the window's text after its prefix. Entity names are
normalised with the abbreviations its document defines in any of its windows.
"""

from __future__ import annotations

from collections.abc import Callable

from ebm_platform.index.window_index import index_text
from ebm_platform.pico.names import abbreviations, entity_name
from ebm_platform.pico.tagger import PicoTagger

BATCH = 256


def tag_windows(windows: list[dict], tagger: PicoTagger,
                progress: Callable[[str], None] | None = None) -> dict[str, list[dict]]:
    """window_id -> typed spans (type, text, start, end in the window text, name)."""
    known: dict[str, dict[str, str]] = {}
    for row in windows:
        known.setdefault(row["doc_id"], {}).update(abbreviations(row["text"]))
    out: dict[str, list[dict]] = {}
    for start in range(0, len(windows), BATCH):
        batch = windows[start:start + BATCH]
        texts = [index_text(r["title"], r["section"], r["text"]) for r in batch]
        tagged = tagger.tag([full for full, _ in texts], [prefix for _, prefix in texts])
        for row, entities in zip(batch, tagged):
            for entity in entities:
                entity["name"] = entity_name(entity["text"], entity["type"], known[row["doc_id"]])
            out[row["window_id"]] = [e for e in entities if e["name"]]
        if progress:
            progress(f"tagged {min(start + BATCH, len(windows))}/{len(windows)} windows")
    return out
