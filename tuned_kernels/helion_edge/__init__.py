"""The Helion edge: the only code that imports Helion. Helion kernels take their configs from the bundles
through Helion's own autotune-cache plug point (cache.py), installed once Helion's autotuner is imported
(hooks.py); keys.py says how a Helion kernel, its specialization and its configs become entries."""
