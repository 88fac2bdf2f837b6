"""Benchmarks: each bench/<name>.py is a script; bench/support holds what they share, bench/<name>_parts their parts."""
