"""What a landing folder holds, as the landing sensor and source_documents see it: per file
[mtime_ns, size, sha256] (a file whose mtime and size are unchanged keeps its earlier hash), and
one content digest per folder that ignores mtimes, so a folder returned to earlier content has
its earlier digest."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ebm_platform.corpus.landing import file_sha256, landing_files, unreadable

FileState = dict[str, list]  # relative path -> [mtime_ns, size, sha256]


def scan_folder(folder: Path, previous: FileState | None = None) -> FileState:
    """The folder's document files; unchanged (mtime, size) reuse the previous hash; a file that is
    not read (a link outside the folder, over the size limit) is recorded by its reason and size, unhashed."""
    old = previous or {}
    files: FileState = {}
    inside = folder.resolve()
    for path in landing_files(folder):
        rel = str(path.relative_to(folder))
        stat = path.stat()
        seen = old.get(rel)
        if seen and seen[0] == stat.st_mtime_ns and seen[1] == stat.st_size:
            files[rel] = seen
        elif reason := unreadable(path, inside):  # not hashed: source_documents quarantines it unread
            files[rel] = [stat.st_mtime_ns, stat.st_size, f"{reason} ({stat.st_size} bytes)"]
        else:
            files[rel] = [stat.st_mtime_ns, stat.st_size, file_sha256(path)]
    return files


def content_digest(files: FileState) -> str:
    """One digest of the folder's file names and contents (mtimes ignored)."""
    items = sorted((rel, meta[2]) for rel, meta in files.items())
    return hashlib.sha256(json.dumps(items).encode()).hexdigest()[:16]
