"""What the benchmarks share: Django bootstrap, databases, subprocesses, Redis, CPU accounting and report helpers.

Only `bootstrap` may be imported before Django is set up; the other modules import Django's and Dockyard's code.
"""
