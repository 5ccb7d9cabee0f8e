"""fungrad benchmarks: ``python -m benchmarks`` (see run.py)."""
