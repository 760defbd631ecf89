"""fusejit benchmarks: ``python -m bench`` (see bench/__main__.py). Benchmarks are not tests."""
