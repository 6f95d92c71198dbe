"""Test collection: every docstring example in `jaxbai` and `experiments` runs as a doctest."""

collect_ignore = ["experiments/bench_numba.py"]  # needs numba (the `bench` extra), not a test dep
