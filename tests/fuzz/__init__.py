"""Hostile-input fuzzing (issue 16): hypothesis strategies that generate scenario documents,
CLI calls, uploaded ``.npz`` dumps and URL parameters; the checks that run one case
(``targets``); and a pool of memory- and time-limited worker processes that classifies each
case as ok, refused, crash, hang or oom (``runner``). ``python -m bench.fuzz`` runs
thousands of cases; ``tests/test_fuzz_slice.py`` runs a fixed small slice in ``make test``.
"""
