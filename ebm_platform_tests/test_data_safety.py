"""The stores' data-safety rules (issue #43's audit): a committed window table is never overwritten,
landing files are checked before any byte is read and hashed in chunks (the sensor too), and a
partitioned input read without some of its partitions says which."""

from __future__ import annotations

import hashlib
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from ebm_platform.conditions import load_catalogue
from ebm_platform.corpus import landing
from ebm_platform.corpus.landing import PartitionLoad, file_sha256, read_partition
from ebm_platform.landing_state import scan_folder
from ebm_platform.settings import DEFAULT_CATALOGUE
from ebm_platform_tests.test_retrieval import window_frame


def test_a_committed_window_table_that_cannot_be_opened_is_never_overwritten(tmp_path, monkeypatch):
    from ebm_platform.index.embeddings import get_encoder
    from ebm_platform.index.window_index import UnreadableTableError, WindowIndex

    encoder = get_encoder()
    WindowIndex(tmp_path).replace_partition("X", window_frame("w1", "w2"), encoder)
    index = WindowIndex(tmp_path)
    versions = index.committed_versions()
    assert versions >= 1

    def incompatible(*args, **kwargs):
        raise ValueError("Table 'windows' was not found")  # what LanceDB raises for a table it cannot read

    monkeypatch.setattr(index.db, "open_table", incompatible)
    with pytest.raises(UnreadableTableError, match="committed versions but cannot be opened"):
        index.table()
    with pytest.raises(UnreadableTableError):
        index.replace_partition("Y", window_frame("w3"), encoder)
    monkeypatch.undo()
    assert WindowIndex(tmp_path).committed_versions() == versions
    assert sorted(WindowIndex(tmp_path).table().to_arrow()["window_id"].to_pylist()) == ["w1", "w2"]


def test_a_partition_commit_reads_its_staging_file_instead_of_mapping_it(tmp_path, monkeypatch):
    """A memory-mapped staging file's pages count as resident memory: the commit of the 982-article
    lake's 6 GB file peaked at 8.5 GB. Both the first commit (a new table) and a merge read it."""
    import pyarrow as pa

    from ebm_platform.index.embeddings import get_encoder
    from ebm_platform.index.window_index import WindowIndex

    def mapped(*args, **kwargs):
        raise AssertionError("the staging file was memory-mapped")

    monkeypatch.setattr(pa, "memory_map", mapped)
    encoder = get_encoder()
    WindowIndex(tmp_path).replace_partition("X", window_frame("w1", "w2"), encoder)
    WindowIndex(tmp_path).replace_partition("Y", window_frame("w3"), encoder)  # a new partition: appended
    assert sorted(WindowIndex(tmp_path).table().to_arrow()["window_id"].to_pylist()) == ["w1", "w2", "w3"]
    WindowIndex(tmp_path).replace_partition("Y", window_frame("w4"), encoder)  # its rows replaced: merged
    assert sorted(WindowIndex(tmp_path).table().to_arrow()["window_id"].to_pylist()) == ["w1", "w2", "w4"]


def test_a_table_without_a_committed_version_still_reads_as_absent(tmp_path):
    from ebm_platform.index.window_index import WindowIndex

    (tmp_path / "windows.lance" / "_versions").mkdir(parents=True)  # a creation killed before its first commit
    index = WindowIndex(tmp_path)
    assert index.committed_versions() == 0
    with pytest.raises(FileNotFoundError):
        index.table()


def _landing(tmp_path: Path) -> Path:
    folder = tmp_path / "landing" / "ACL"
    folder.mkdir(parents=True)
    (folder / "trial.md").write_text(
        "---\ntitle: Knee trial\nevidence_grade: C\nyear: 2020\n---\n# Trial\nExercise reduced knee pain after ACL injury.\n"
    )
    (folder / "big.md").write_text("---\ntitle: Big\n---\n" + "word " * 400)
    outside = tmp_path / "outside.md"
    outside.write_text("---\ntitle: Outside\n---\n# Outside\nNot to be read.\n")
    (folder / "link.md").symlink_to(outside)
    return folder


def test_oversized_files_and_outside_links_are_quarantined_unread(tmp_path, monkeypatch):
    folder = _landing(tmp_path)
    monkeypatch.setattr(landing, "MAX_FILE_BYTES", 1_000)
    read: list[str] = []
    real_sha, real_read = landing.file_sha256, Path.read_bytes
    monkeypatch.setattr(landing, "file_sha256", lambda path: read.append(path.name) or real_sha(path))
    monkeypatch.setattr(Path, "read_bytes", lambda path: read.append(path.name) or real_read(path))
    load = PartitionLoad()
    documents = [d for batch in read_partition(folder, "ACL", load_catalogue(DEFAULT_CATALOGUE), load) for d in batch]
    reasons = {Path(q.path).name: q.reason for q in load.quarantine}
    assert "over the 0 MiB limit: not read" in reasons["big.md"]
    assert "outside the landing folder" in reasons["link.md"]
    assert [d.title for d in documents] == ["Knee trial"]
    assert "big.md" not in read and "link.md" not in read and "outside.md" not in read


def test_the_landing_sensor_hashes_in_chunks_and_never_hashes_what_is_not_read(tmp_path, monkeypatch):
    folder = _landing(tmp_path)
    monkeypatch.setattr(landing, "MAX_FILE_BYTES", 1_000)
    assert file_sha256(folder / "trial.md") == hashlib.sha256((folder / "trial.md").read_bytes()).hexdigest()
    hashed: list[str] = []
    real = landing.file_sha256
    monkeypatch.setattr("ebm_platform.landing_state.file_sha256", lambda path: hashed.append(path.name) or real(path))
    state = scan_folder(folder)
    assert hashed == ["trial.md"]
    assert state["big.md"][2].startswith("file of 0 MiB is over") and state["link.md"][2].startswith("symbolic link")
    (folder / "big.md").write_text("---\ntitle: Big\n---\n" + "word " * 500)  # grows: a new state, still unhashed
    assert scan_folder(folder, state)["big.md"] != state["big.md"] and hashed == ["trial.md"]


def test_a_partial_partitioned_input_is_named_in_a_warning(tmp_path):
    from ebm_platform.defs.io import LakeParquetIOManager

    partitions = dg.StaticPartitionsDefinition(["ACL", "LBP", "NP"])

    @dg.asset(partitions_def=partitions, io_manager_key="io_manager")
    def windows_by_condition(context) -> pl.DataFrame:
        return pl.DataFrame({"condition": [context.partition_key]})

    @dg.asset(
        ins={"windows": dg.AssetIn("windows_by_condition", partition_mapping=dg.AllPartitionMapping())},
        io_manager_key="io_manager",
    )
    def trained_on_all(windows: pl.DataFrame) -> pl.DataFrame:
        return windows

    instance = dg.DagsterInstance.ephemeral()
    resources = {"io_manager": LakeParquetIOManager(root=str(tmp_path))}
    dg.materialize([windows_by_condition], partition_key="ACL", instance=instance, resources=resources)
    result = dg.materialize(
        [windows_by_condition, trained_on_all], selection=[trained_on_all], instance=instance, resources=resources
    )
    assert result.output_for_node("trained_on_all")["condition"].to_list() == ["ACL"]
    warnings = [
        e.user_message
        for e in instance.all_logs(result.run_id)
        if e.level == 30 and "not materialised" in e.user_message
    ]
    assert warnings == ["windows_by_condition: 2 of 3 partitions not materialised, read without them: LBP, NP"]


class Payload:
    """Stands for any object a lake writer could plant in a model file."""


def test_models_are_stored_without_pickle_and_untrusted_types_are_refused(tmp_path):
    from sklearn.linear_model import LogisticRegression
    from skops.io.exceptions import UntrustedTypesFoundException

    from ebm_platform.model_store import load_estimators, save_estimators

    fitted = LogisticRegression().fit([[0.0], [1.0], [0.2], [0.9]], [0, 1, 0, 1])
    save_estimators(tmp_path / "m.skops", {"model": fitted, "absent": None}, {"key": "k", "figures": [0.5]})
    assert (tmp_path / "m.skops").read_bytes()[:2] == b"PK"  # skops' zip of JSON schemas and arrays, no pickle stream
    estimators, meta = load_estimators(tmp_path / "m.skops")
    assert meta == {"key": "k", "figures": [0.5]} and set(estimators) == {"model"}
    assert estimators["model"].predict([[0.95]]).tolist() == [1]
    save_estimators(tmp_path / "planted.skops", {"model": Payload()}, {})
    with pytest.raises(UntrustedTypesFoundException):
        load_estimators(tmp_path / "planted.skops")
    assert load_estimators(tmp_path / "none.skops") is None


def test_text_vectorizers_vocabularies_are_stored_as_one_json_list_and_read_back(tmp_path):
    """A vocabulary in skops' schema is one node per term (seconds to load a large one); stored as a
    JSON list it gives the same transform, and the fitted model being saved keeps its own."""
    import zipfile

    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from ebm_platform.model_store import load_estimators, save_estimators

    texts = ["pain fell with exercise", "no change in pain", "exercise improved function", "function did not change"]
    inner = ColumnTransformer([("words", TfidfVectorizer(ngram_range=(1, 2)), 0)])
    fitted = make_pipeline(inner, LogisticRegression()).fit([[t] for t in texts], [1, 0, 1, 0])
    vocabulary = dict(inner.transformers_[0][1].vocabulary_)
    save_estimators(tmp_path / "m.skops", {"model": fitted}, {})
    assert inner.transformers_[0][1].vocabulary_ == vocabulary  # the live model is left whole
    schema = zipfile.ZipFile(tmp_path / "m.skops").read("schema.json").decode()
    assert '"exercise improved"' not in schema  # the terms are not schema nodes
    estimators, _ = load_estimators(tmp_path / "m.skops")
    restored = estimators["model"]
    assert restored.steps[0][1].transformers_[0][1].vocabulary_ == vocabulary
    probe = [["exercise improved pain"], ["no change"]]
    assert restored.predict_proba(probe).tolist() == fitted.predict_proba(probe).tolist()


@pytest.mark.parametrize("dependency", ["readers.py", "windows.py", "lexical.py"])
def test_the_verdict_key_covers_the_code_that_reads_its_training_text(datasets_dir, monkeypatch, dependency):
    from ebm_platform import code_version
    from ebm_platform.evaluation.verdict_training import training_key

    before = training_key(datasets_dir, "encoder")
    real = code_version.file_content
    monkeypatch.setattr(
        code_version, "file_content", lambda path: real(path) + (b"changed" if path.name == dependency else b"")
    )
    assert training_key(datasets_dir, "encoder") != before


def test_one_process_trains_a_model_key_at_a_time_and_the_limit_is_part_of_the_key(datasets_dir, tmp_path, monkeypatch):
    import fcntl

    from ebm_platform.evaluation.verdict_training import training_key
    from ebm_platform.trained_models import training_lock

    monkeypatch.setenv("EBM_MODEL_CACHE", str(tmp_path))
    with training_lock("verdict_model", "k1"):
        with open(tmp_path / "verdict_model" / "k1.lock", "a") as probe:  # another process's attempt
            with pytest.raises(BlockingIOError):
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            with training_lock("verdict_model", "k2"):  # another key trains at the same time
                pass
    with open(tmp_path / "verdict_model" / "k1.lock", "a") as probe:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released
    assert len({training_key(datasets_dir, "encoder", limit) for limit in (None, 40, 12)}) == 3
