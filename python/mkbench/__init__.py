"""mkbench from Python: a scikit-learn KMeans over mkbench's C++ fit (docs/python.md)."""
from mkbench._core import gpu_count, variants
from mkbench.kmeans import KMeans

__all__ = ["KMeans", "gpu_count", "variants"]
