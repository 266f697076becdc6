"""knowledge_graph's build a batch at a time: `partition_graph` from the inputs' parquet files, and the IO
manager writing a step's output a row group at a time."""

from __future__ import annotations

import dagster as dg
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ebm_platform.defs.io import PARTITION_VERSION, LakeParquetIOManager
from ebm_platform.graph import build
from ebm_platform.graph.schema import load_schema
from ebm_platform.graph.store import GraphStore
from ebm_platform.versions import parquet_version

NAMES = ["motor control exercise", "motor control exercises", "general exercise", "vas", "12 weeks", "adults"]


def _embed(names: list[str]) -> np.ndarray:
    """One axis per name of NAMES, except that the plural lies next to the singular (cosine 0.99)."""
    vectors = np.zeros((len(names), len(NAMES)), np.float32)
    for row, name in enumerate(names):
        vectors[row, NAMES.index(name)] = 1.0
        if name == "motor control exercises":
            vectors[row, :2] = [0.99, 0.141]
    return vectors


def _inputs(tmp_path) -> tuple[list, list, list]:
    """Two documents, three windows and their elements as the upstream assets' parquet files."""
    documents = pl.DataFrame(
        {
            "doc_id": ["d1", "d2"],
            "title": ["Trial one", "Trial two"],
            "grade": ["C", "B"],
            "year": [2019, 2021],
            "source": ["pubmed", "cochrane"],
            "text": ["full text one", "full text two"],  # not read
        }
    )
    windows = pl.DataFrame(
        {
            "window_id": ["w1", "w2", "w3"],
            "doc_id": ["d1", "d1", "d2"],
            "grade": ["C", "C", "B"],
            "section": ["methods", "results", "conclusions"],
            "text": ["Adults did motor control exercise.", "VAS fell at 12 weeks.", "Motor control exercises helped."],
        }
    )

    def element(window, kind, subject, subject_type, predicate=None, obj=None, object_type=None) -> dict:
        return {
            "window_id": window,
            "doc_id": "d",
            "kind": kind,
            "subject": subject,
            "subject_type": subject_type,
            "predicate": predicate,
            "object": obj,
            "object_type": object_type,
        }

    elements = pl.DataFrame(
        [
            element("w1", "entity", "Motor control exercise", "Intervention"),
            element("w1", "entity", "motor control exercise", "Intervention"),
            element("w1", "entity", "The adults", "Population"),
            element("w1", "entity", "General exercise", "Comparator"),
            element(
                "w1",
                "relation",
                "Motor control exercise",
                "Intervention",
                "compares_to",
                "general exercise",
                "Comparator",
            ),
            element(
                "w1", "relation", "Motor control exercise", "Intervention", "has_population", "adults", "Population"
            ),
            element("w2", "entity", "VAS", "Outcome"),
            element("w2", "entity", "12 weeks", "Timepoint"),
            element("w2", "attribute", "VAS", "Outcome", "followup_weeks", "12.0"),
            element("w2", "attribute", "VAS", "Outcome", "followup_weeks", "12.0"),
            element("w3", "entity", "Motor control exercises", "Intervention"),
            element("w3", "entity", "Motor control exercises", "Intervention"),
            element(
                "w3", "relation", "Motor control exercises", "Intervention", "compares_to", "unknown", "Comparator"
            ),
        ]
    )
    tmp_path.mkdir(parents=True, exist_ok=True)
    files = []
    for name, frame in (("documents", documents), ("windows", windows), ("elements", elements)):
        frame.write_parquet(path := tmp_path / f"{name}.parquet")
        files.append([path])
    return files[0], files[1], files[2]


def _built(tmp_path) -> tuple[dict[str, pl.DataFrame], pl.DataFrame, build.PartitionGraph]:
    built = build.partition_graph("LBP", *_inputs(tmp_path), load_schema("pico_extended"), _embed, 0.92)
    tables = {t: pl.read_parquet(f) for t, f in built.files.items()}
    return tables, built.entities, built


def test_a_partitions_graph_is_built_the_same_a_few_rows_at_a_time(tmp_path, monkeypatch):
    """The tables `partition_graph` computes in its scratch database do not depend on how many input rows,
    names or entity rows it holds at a time; the merged names, mentions, relations and attributes are the
    partition's."""
    tables, entities, built = _built(tmp_path / "whole")
    assert entities["id"].to_list() == [
        "Comparator|general exercise",
        "Intervention|motor control exercise",
        "Outcome|vas",
        "Population|adults",
        "Timepoint|12 weeks",
    ]
    exercise = entities.row(1, named=True)  # the plural merged into the singular; named by its most frequent form
    assert exercise["name"] == "Motor control exercises" and exercise["mentions"] == 4
    assert tables["MENTIONED_IN"].filter(pl.col("from") == exercise["id"]).rows() == [
        (exercise["id"], "LBP|w1", "Motor control exercises"),
        (exercise["id"], "LBP|w3", "Motor control exercises"),
    ]
    assert tables["RELATES"].select("from", "to", "type").rows() == [
        ("Intervention|motor control exercise", "Comparator|general exercise", "compares_to"),
        ("Intervention|motor control exercise", "Population|adults", "has_population"),
    ]  # the relation to an entity no element names is dropped
    assert tables["Attribute"].height == 1 and tables["HAS_ATTRIBUTE"].rows() == [
        ("Outcome|vas", tables["Attribute"]["id"][0], "w2")
    ]
    assert tables["Window"]["id"].to_list() == ["LBP|w1", "LBP|w2", "LBP|w3"] and "text" not in tables["Document"]
    assert built.relations_by_type == {"compares_to": 1, "has_population": 1} and built.mentions_before_merge == 8

    monkeypatch.setattr(build, "BATCH_ROWS", 2)
    few_tables, few_entities, few = _built(tmp_path / "few")
    assert few_entities.equals(entities)
    assert all(few_tables[t].equals(frame) for t, frame in tables.items())
    streamed = list(few.entity_table())
    assert len(streamed) == 3  # five entities, two at a time
    vectors = pl.from_arrow(pa.Table.from_batches(streamed))["vector"].to_list()
    assert np.allclose(vectors, _embed(list(entities["norm"])))  # each entity's canonical name's vector
    assert not few.vectors.exists()  # the scratch folder goes once the entity table has been read

    with GraphStore(tmp_path / "g.kz") as store:  # Kùzu copies the table files itself
        store.replace_partition("LBP", built.tables(), "run-1")
        assert store.count("MATCH (:Entity)-[m:MENTIONED_IN]->(:Window) RETURN count(m)") == 6
        assert store.count("MATCH (:Entity)-[r:RELATES]->(:Entity) RETURN count(r)") == 2


def test_a_step_can_hand_its_output_a_batch_at_a_time(tmp_path):
    """An output given as a pyarrow RecordBatchReader is written a row group at a time, with the partition's
    version and its row count, and read back downstream as one frame."""
    schema = pa.schema([("id", pa.string()), ("n", pa.int64())])

    @dg.asset
    def streamed() -> dg.Output[pa.RecordBatchReader]:
        batches = (pa.record_batch([[f"e{i}", f"f{i}"], [i, i + 1]], schema=schema) for i in range(3))
        return dg.Output(pa.RecordBatchReader.from_batches(schema, batches), metadata={PARTITION_VERSION: "run-7"})

    @dg.asset
    def total(streamed: pl.DataFrame) -> pl.DataFrame:
        return streamed.select(pl.col("n").sum())

    result = dg.materialize([streamed, total], resources={"io_manager": LakeParquetIOManager(root=str(tmp_path))})
    path = tmp_path / "assets" / "streamed.parquet"
    assert pq.ParquetFile(path).num_row_groups == 3 and parquet_version(path) == "run-7"
    metadata = result.asset_materializations_for_node("streamed")[0].metadata
    assert metadata["dagster/row_count"].value == 6
    assert [c.name for c in metadata["dagster/column_schema"].value.columns] == ["id", "n"]
    assert result.output_for_node("total").item() == 9
