"""Benchmarks behind ``memstrata bench``: numbers against a baseline of the same run."""
