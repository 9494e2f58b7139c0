"""The Triton edge: the only code that imports Triton's internals or patches Triton, one module per
concern: the autotuner hook (autotuner.py), tuning keys and configs (keys.py), compiling without launching
(compile.py), serving compiled kernels through the cache manager (cache_manager.py), driving an op's
launches (launch.py), the compiler's facts for fingerprints (compiler_facts.py), timing (benchmarker.py)
and "are we on the interpreter" (interpreter.py). A new Triton version changes this folder."""
