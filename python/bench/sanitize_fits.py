"""Small fits that run every piece of the Python package's own device code once, for
compute-sanitizer (tests/device/sanitize-python.sh): a NumPy array's upload (70 MB: three 32 MiB
pieces through the pinned ring), a CuPy array of one K with k-means++, and a CuPy range, whose
K-choice passes read the run's device buffer. Prints one line, "fits: ...", and exits non-zero
when a fit fails."""
import sys

import numpy as np

import mkbench

try:
    import cupy
except Exception as error:  # ImportError, or CUDA libraries missing
    print(f"CuPy is not importable ({error.__class__.__name__}: {error}): the device-array fits need it")
    sys.exit(2)

if mkbench.gpu_count() == 0:
    print("no CUDA GPU: these fits exercise the GPU code")
    sys.exit(2)

X = np.random.default_rng(1).random((2_200_000, 8), dtype=np.float32)  # 70.4 MB: three pieces of the ring
one = mkbench.KMeans(6, init="k-means++", max_iter=3, tol=0, random_state=2).fit(X)
device_X = cupy.asarray(X[:20_000])
device_one = mkbench.KMeans(5, init="k-means++", max_iter=3, tol=0, random_state=3).fit(device_X)
device_range = mkbench.KMeans(range(3, 6), init="first", max_iter=3, tol=0, random_state=4).fit(device_X)
print(f"fits: NumPy K=6 {one.variant_} staging={one.fit_seconds_['staging']}, CuPy K=5 {device_one.variant_}, "
      f"CuPy K=3..5 {device_range.variant_} best_k={device_range.best_k_}")
