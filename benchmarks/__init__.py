"""Benchmarks run by `make bench`: each prints numbers and ratios against a same-run baseline."""
