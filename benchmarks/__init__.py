"""Benchmark harness for agc's hashing hot path (see README, Performance)."""
