"""mkbench from Python: a scikit-learn KMeans over mkbench's C++ fit, and `mkbench run` and
`mkbench suite` as functions (docs/python.md)."""
from mkbench._core import gpu_count, variants
from mkbench.bench import run, suite
from mkbench.kmeans import KMeans

__all__ = ["KMeans", "gpu_count", "run", "suite", "variants"]
