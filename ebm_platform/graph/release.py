"""The SR-RAG release edge list (edges.jsonl.gz: source, target, key, relation) in Kùzu or NetworkX."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import kuzu
import polars as pl


def read_edges(path: Path) -> pl.DataFrame:
    """Edges as a frame with columns source, target, key, relation."""
    with gzip.open(path, "rb") as handle:
        frame = pl.read_ndjson(io.BytesIO(handle.read()))
    missing = {"source", "target", "relation"} - set(frame.columns)
    if missing:
        raise ValueError(f"{path}: not an SR-RAG edge list (missing {', '.join(sorted(missing))})")
    if "key" not in frame.columns:
        frame = frame.with_columns(pl.lit(0).alias("key"))
    return frame.select(
        pl.col("source").cast(pl.String),
        pl.col("target").cast(pl.String),
        pl.col("key").cast(pl.Int64),
        pl.col("relation").cast(pl.String),
    )


def load_into_kuzu(edges: pl.DataFrame, db_dir: Path) -> dict[str, int]:
    """Load an edge list into a fresh Kùzu database (refuses to touch an existing one)."""
    db_dir = Path(db_dir)
    if db_dir.exists():
        raise FileExistsError(f"{db_dir} exists; load-edges writes a fresh database, choose a new --db path")
    db_dir.parent.mkdir(parents=True, exist_ok=True)
    db = kuzu.Database(str(db_dir))
    conn = kuzu.Connection(db)
    try:
        conn.execute("CREATE NODE TABLE Node(id STRING PRIMARY KEY)")
        conn.execute("CREATE REL TABLE Edge(FROM Node TO Node, key INT64, relation STRING)")
        nodes = pl.concat([edges["source"], edges["target"]]).unique().sort().to_frame("id")
        conn.execute("COPY Node FROM $frame", {"frame": nodes})
        conn.execute("COPY Edge FROM $frame", {"frame": edges.rename({"source": "from", "target": "to"})})
        counts = {"nodes": nodes.height, "edges": edges.height}
    finally:
        conn.close()
        db.close()
    return counts


def two_hop_kuzu(conn: kuzu.Connection, node: str) -> int:
    """Distinct nodes (other than the start) reachable in one or two outgoing hops."""
    result = conn.execute(
        "MATCH (a:Node)-[:Edge*1..2]->(b:Node) WHERE a.id = $id AND b.id <> $id RETURN count(DISTINCT b.id)",
        {"id": node},
    )
    return int(result.get_next()[0])


def load_into_networkx(edges: pl.DataFrame):
    """The paper's own stack: a NetworkX MultiDiGraph."""
    import networkx as nx

    graph = nx.MultiDiGraph()
    for source, target, key, relation in edges.iter_rows():
        graph.add_edge(source, target, key=key, relation=relation)
    return graph


def two_hop_networkx(graph, node: str) -> int:
    import networkx as nx

    reached = nx.single_source_shortest_path_length(graph, node, cutoff=2)
    return len(reached) - 1
