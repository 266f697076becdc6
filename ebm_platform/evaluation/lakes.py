"""Evaluation lakes: a whole dataset built through the production assets, beside the production lake.

The lake lives at <EBM_LAKE>/eval/<benchmark>-<key>, where key hashes the dataset's files, the
settings that shape the corpus (catalogue, window budget, schema, embedding model and backend) and
the source of the code that builds it (corpus/, graph/, index/, pico/), so a rebuild happens only when one
of them changes. It is built in a child process whose EBM_LAKE and
EBM_CATALOGUE point at the evaluation lake and the catch-all catalogue: the same readers,
windows, extraction, graph and index code as production, and no write to the production lake.
One builder per lake: a second run waits on `<lake>.lock` and then reuses the finished lake; the
builder child receives SIGTERM when the process that started it dies (an interrupted `ebm eval`
once left two orphaned builders writing into one folder).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ebm_platform.atomic import write_text_atomic
from ebm_platform.code_version import package_digest
from ebm_platform.lake_layout import OBJECT_STORE, LakeLayout
from ebm_platform.process import cores
from ebm_platform.settings import EVALUATION_CATALOGUE, Settings

DATASET_FILES = {
    "evidence-inference": lambda root: sorted((root / "evidence_inference" / "xml").glob("*.nxml")),
    "pubmedqa": lambda root: [root / "pubmedqa" / "ori_pqal_dev.json"],
}
MARKER = "COMPLETE.json"
PR_SET_PDEATHSIG = 1  # prctl option (linux/prctl.h)
SIG_DFL = 0  # the default disposition, for libc's signal()
BUILDING_CODE = ("corpus", "graph", "index", "pico")  # packages whose code shapes an evaluation lake


def code_digest() -> str:
    """Hash of the source files that build a lake's corpus, graph and index."""
    return package_digest(BUILDING_CODE)


def lake_key(benchmark: str, datasets_dir: Path, settings: Settings, ids: set[str] | None = None) -> str:
    """Hash of the dataset's bytes (restricted to `ids` when given) and the corpus-shaping settings."""
    digest = hashlib.sha256()
    digest.update(json.dumps(sorted(ids) if ids is not None else "all").encode())
    for path in DATASET_FILES[benchmark](Path(datasets_dir)):
        if ids is not None and path.stem not in ids and path.suffix == ".nxml":
            continue
        digest.update(path.name.encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    shape = [
        settings.window_tokens,
        settings.window_overlap,
        settings.max_windows_per_chunk,
        settings.group_similarity,
        settings.graph_schema,
        settings.embedding_model,
        settings.embedding_backend,
        settings.pico_extractor,
        code_digest(),
        EVALUATION_CATALOGUE.read_text(encoding="utf-8"),
    ]
    digest.update(json.dumps(shape).encode())
    return digest.hexdigest()[:12]


def _die_with_parent() -> None:
    """In the builder child (Linux): receive SIGTERM when the process that started it dies, so an
    interrupted `ebm eval` never leaves a build running on behind it."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.signal(signal.SIGTERM, SIG_DFL)  # an ignored SIGTERM would survive exec and void the death signal
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn_builder(command: list[str], env: dict[str, str]) -> subprocess.Popen:
    """Start a lake builder whose output is read line by line and which dies with its parent."""
    with warnings.catch_warnings():
        # the child execs the builder at once, so LanceDB's warning about its runtime in a forked child
        # (printed into the builder's output otherwise) does not apply
        warnings.filterwarnings("ignore", message="lancedb fork support is experimental", category=RuntimeWarning)
        return subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )


@contextmanager
def lake_lock(lake: Path, progress: Callable[[str], None]) -> Iterator[None]:
    """One builder per evaluation lake: an exclusive lock on `<lake>.lock` beside the folder; a
    second run waits for the first and then reuses what it built."""
    lake.parent.mkdir(parents=True, exist_ok=True)
    with open(lake.parent / f"{lake.name}.lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"another process is building {lake}; waiting for it ...")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def evaluation_lake(
    benchmark: str,
    datasets_dir: Path,
    settings: Settings,
    rebuild: bool = False,
    progress: Callable[[str], None] = print,
    ids: set[str] | None = None,
) -> Path:
    """Build (or reuse) the evaluation lake for a benchmark and return its folder; `ids` limits
    the corpus to those documents (e.g. one split's articles) instead of the whole dataset."""
    if benchmark not in DATASET_FILES:
        raise ValueError(f"unknown benchmark {benchmark!r}; choose one of {', '.join(DATASET_FILES)}")
    lake = LakeLayout(settings.lake).eval_lakes / f"{benchmark}-{lake_key(benchmark, datasets_dir, settings, ids)}"
    with lake_lock(lake, progress):
        if (lake / MARKER).is_file() and not rebuild:
            progress(f"reusing evaluation lake {lake}")
            return lake
        _build(lake, benchmark, datasets_dir, rebuild, progress, ids)
    return lake


LAKE_INSTANCE = """# The evaluation lake's own Dagster instance (written by evaluation/lakes.py).
telemetry:
  enabled: false
python_logs:
  python_log_level: INFO  # as the production instance: no "Executing step in subprocess" lines on the console
concurrency:
  pools:
    default_limit: 1
"""


def lake_instance(lake: Path) -> Path:
    """The evaluation lake's own Dagster instance folder (DAGSTER_HOME of its build): its runs stay
    out of the production history, and, as with any persistent instance, the build runs each step
    in a process of its own (the multiprocess executor), so that the peak memory it records is the
    step's own and not what the runs before it left resident (an ephemeral instance ran every run
    in the building process). Absolute: Dagster refuses a relative DAGSTER_HOME, and the lake is
    relative when EBM_LAKE is not set (`data_lake/eval/...`)."""
    home = Path(LakeLayout(lake).dagster).resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.is_file() or config.read_text() != LAKE_INSTANCE:
        write_text_atomic(config, LAKE_INSTANCE)
    return home


def _build(
    lake: Path, benchmark: str, datasets_dir: Path, rebuild: bool, progress: Callable[[str], None], ids: set[str] | None
) -> None:
    """Run `ebm lake build` for the lake in a child process (resuming an interrupted build) and mark it complete."""
    (lake / MARKER).unlink(missing_ok=True)
    resume = Path(LakeLayout(lake).asset_dir()).is_dir() and not rebuild  # an interrupted build: keep what it finished
    stored = Path(LakeLayout(lake).lancedb).is_dir()  # local (no EBM_OBJECT_STORE); a rebuild copies its encodings
    env = dict(
        os.environ, EBM_LAKE=str(lake), EBM_CATALOGUE=str(EVALUATION_CATALOGUE), EBM_DATASETS_DIR=str(datasets_dir)
    )
    env["DAGSTER_HOME"] = str(lake_instance(lake))
    env.pop(OBJECT_STORE, None)  # evaluation lakes keep their stores in their own folder
    command = [sys.executable, "-m", "ebm_platform.cli", "lake", "build", benchmark]
    if ids is not None:
        lake.mkdir(parents=True, exist_ok=True)
        write_text_atomic(lake / "corpus_ids.txt", "\n".join(sorted(ids)))
        command += ["--ids", str(lake / "corpus_ids.txt")]
    if resume:
        command.append("--resume")
    scope = f"{len(ids)} selected" if ids is not None else "every"
    progress(f"building evaluation lake {lake} ({scope} {benchmark} documents; this takes a while) ...")
    started = time.perf_counter()
    # the build's output goes through `progress` (stderr in the CLI), never into a --json answer
    with spawn_builder(command, env) as child:
        for line in child.stdout:
            if line.strip() and "Loading weights" not in line:
                progress(line.rstrip())
    if child.returncode:
        raise RuntimeError(f"building the evaluation lake failed (exit {child.returncode}); see the output above")
    write_text_atomic(
        lake / MARKER,
        json.dumps(
            {
                "benchmark": benchmark,
                "seconds": round(time.perf_counter() - started, 1),
                "resumed": resume,
                "encodings_reused": stored,
                "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
                "cores": cores(),
                "datasets_dir": str(datasets_dir),
            }
        ),
    )
