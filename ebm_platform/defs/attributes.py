"""What every asset tells an operator besides its own metadata: an owner, its layer as a tag and a
`code_version` (a digest of the packages whose code computes it), so the UI shows who owns an
asset, filters by layer and marks assets whose code changed since they were materialised."""

from collections.abc import Sequence

import dagster as dg

from ebm_platform.code_version import package_digest

OWNERS = ["team:ebm-platform"]
CODE_BY_GROUP = {
    "sources": ("corpus",),
    "corpus": ("corpus",),
    "graph": ("graph", "pico"),
    "index": ("index",),
    "benchmark": ("benchmark",),
    "retrieval": ("retrieval",),
    "betr": ("betr", "retrieval"),
    "evaluation": ("evaluation", "retrieval"),
}


def with_operator_attributes(assets: Sequence[dg.AssetsDefinition]) -> list[dg.AssetsDefinition]:
    """The assets with owner, `layer` tag and code_version set (group names are the layers)."""

    def attach(spec: dg.AssetSpec) -> dg.AssetSpec:
        layer = spec.group_name or "default"
        return spec.replace_attributes(
            owners=OWNERS,
            tags={**spec.tags, "layer": layer},
            code_version=package_digest(CODE_BY_GROUP.get(layer, ()), 12),
        )

    return list(dg.map_asset_specs(attach, assets))
