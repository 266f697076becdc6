"""The one partitions definition shared by every per-condition asset."""


import dagster as dg

from ebm_platform.conditions import active_catalogue

conditions_partitions = dg.StaticPartitionsDefinition(active_catalogue().codes)
