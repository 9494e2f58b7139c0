"""The steps of benchmarks/run.py, one module each: what a step measures and the verdicts it gives."""
