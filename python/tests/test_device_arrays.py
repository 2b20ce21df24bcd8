"""mkbench.KMeans on device arrays (CuPy, torch.cuda): the same fit as from the NumPy copy of the
same points, with no host copy of the points. Needs a CUDA GPU and CuPy or torch; without them
every test skips, saying which is missing (ctest Python.KMeans runs this file with the others).

The NumPy side runs the variant the device fit ran (variant_), so both sides run the same
kernels; the NumPy path itself is checked against scikit-learn in test_kmeans.py. "No host copy"
is checked twice: by the module's counters of point bytes copied (_core.point_copies), and, in
a fresh process, by the peak resident memory, which a host copy of a 512 MiB array would raise
by at least that much.
"""
import copy as copy_module
import os
import subprocess
import sys
import textwrap
import unittest

import numpy as np
from sklearn.datasets import make_blobs

import mkbench
from mkbench import _core
from support import assert_labels_equal_but_ties

try:
    import cupy
except Exception as error:  # ImportError, or CUDA libraries missing
    cupy = None
    CUPY_MISSING = f"CuPy is not importable ({error.__class__.__name__}: {error})"
try:
    import torch
    TORCH_CUDA = torch.cuda.is_available()
except Exception as error:
    torch = None
    TORCH_CUDA = False
    TORCH_MISSING = f"torch is not importable ({error.__class__.__name__}: {error})"

NO_GPU = "no CUDA GPU: device arrays (CuPy, torch.cuda) need one" if mkbench.gpu_count() == 0 else None


def points(m=200_000, n=16, seed=7):
    return np.random.default_rng(seed).random((m, n), dtype=np.float32)


class DeviceArrays(unittest.TestCase):
    X = points()

    def setUp(self):
        if NO_GPU:
            self.skipTest(NO_GPU)

    def need_cupy(self):
        if cupy is None:
            self.skipTest(CUPY_MISSING)

    def need_torch(self):
        if torch is None:
            self.skipTest(TORCH_MISSING)
        if not TORCH_CUDA:
            self.skipTest("torch has no CUDA device")

    def assert_same_fit(self, ours, reference, X):
        """Centres to 1e-4 of the data's scale, labels equal but for ties that the two fits' centre
        difference explains, inertia to 1e-5."""
        self.assertEqual(ours.variant_, reference.variant_)
        np.testing.assert_allclose(ours.cluster_centers_, reference.cluster_centers_, rtol=0,
                                   atol=1e-4 * float(np.abs(X).max()))
        # A count alone is a guess: on uniform data 22 of 200,000 labels differed after three steps
        # (an H200 at 230cf03), where atomics summing in another order moved the centres by about
        # 1e-7; what bounds a flip is the centres' difference.
        assert_labels_equal_but_ties(self, X, ours.labels_, ours.cluster_centers_, reference.labels_,
                                     reference.cluster_centers_)
        self.assertAlmostEqual(ours.inertia_ / reference.inertia_, 1.0, delta=1e-5)
        self.assertLessEqual(abs(ours.n_iter_ - reference.n_iter_), 1)

    def fit_both(self, device_X, host_X, **params):
        before = _core.point_copies()
        ours = mkbench.KMeans(**params).fit(device_X)
        after = _core.point_copies()
        self.assertEqual(after["host_to_device"], before["host_to_device"], "the device fit copied points from the host")
        self.assertEqual(after["device_to_device"] - before["device_to_device"], host_X.size * host_X.itemsize)
        reference = mkbench.KMeans(**dict(params, variant=ours.variant_)).fit(host_X)
        self.assertGreaterEqual(_core.point_copies()["host_to_device"] - after["host_to_device"],
                                host_X.shape[0] * host_X.shape[1] * 4, "the NumPy fit's upload was not counted")
        return ours, reference

    def test_cupy_matches_numpy_for_every_init(self):
        self.need_cupy()
        device_X = cupy.asarray(self.X)
        for init in ("first", "random", "k-means++", self.X[100:108]):
            with self.subTest(init=init if isinstance(init, str) else "array"):
                # Three steps: what is compared is the seeding and the first steps from it; on uniform
                # data two GPU runs' trajectories part later (init='array' by 2e-4 at step 20 on an
                # H200 at 4a5f3e1), as atomics sum in a different order on each run.
                ours, reference = self.fit_both(device_X, self.X, n_clusters=8, init=init, max_iter=3, tol=0,
                                                random_state=3)
                self.assert_same_fit(ours, reference, self.X)
                self.assertEqual(ours.cluster_centers_.dtype, np.float32)

    def test_cupy_converged_fit_and_n_init(self):
        self.need_cupy()
        # Separated blobs: the fit converges in a few steps to the same partition from any
        # seeding, so three seedings on either side end at the same answer.
        blobs, _ = make_blobs(n_samples=100_000, n_features=8, centers=5, cluster_std=0.5, random_state=2)
        blobs = blobs.astype(np.float32)
        ours, reference = self.fit_both(cupy.asarray(blobs), blobs, n_clusters=5, n_init=3, random_state=11)
        # The same partition, but which of the three seedings wins (and so the order of the
        # centres) is decided by inertias equal to rounding: match the centres first.
        self.assert_same_fit(aligned(ours, reference), reference, blobs)

    def test_cupy_k_range_matches_numpy(self):
        self.need_cupy()
        # The K-choice scores read the points in the run's device buffer; the NumPy side of a
        # range takes the host route (Dataset, host sample), so both ways of scoring meet here.
        blobs, _ = make_blobs(n_samples=60_000, n_features=8, centers=4, cluster_std=1.0, random_state=5)
        blobs = blobs.astype(np.float32)
        ours, reference = self.fit_both(cupy.asarray(blobs), blobs, n_clusters=range(3, 6), init="first",
                                        max_iter=3, tol=0, random_state=7)  # one silhouette sample
        self.assertEqual(ours.best_k_, reference.best_k_)
        self.assert_same_fit(ours, reference, blobs)
        for mine, theirs in zip(ours.results_, reference.results_):
            with self.subTest(k=mine["k"]):
                self.assertEqual(mine["k"], theirs["k"])
                self.assertAlmostEqual(mine["inertia_"] / theirs["inertia_"], 1.0, delta=1e-5)
                for score in ("calinski_harabasz", "davies_bouldin", "silhouette"):
                    self.assertIsNotNone(mine[score], score)
                    self.assertAlmostEqual(mine[score] / theirs[score], 1.0, delta=1e-4, msg=score)

    def test_torch_matches_numpy(self):
        self.need_torch()
        device_X = torch.from_numpy(self.X).cuda()
        ours, reference = self.fit_both(device_X, self.X, n_clusters=8, init="k-means++", max_iter=20, tol=0,
                                        random_state=5)
        self.assert_same_fit(ours, reference, self.X)

    def test_strided_fortran_and_float64_device_arrays(self):
        self.need_torch()
        base = torch.from_numpy(self.X).cuda()
        host64 = self.X.astype(np.float64)
        cases = {
            "rows of a wider array": (torch.cat([base, base], dim=1)[:, :16], self.X),
            "Fortran order": (base.t().contiguous().t(), self.X),
            "float64": (base.double(), host64),
        }
        for name, (device_X, host_X) in cases.items():
            with self.subTest(name):
                # Three steps: on uniform data two GPU runs' trajectories part after about ten steps
                # (atomics sum in a different order; the float64 case differed by 3e-4 at step 10 on
                # an H100), and what is tested here is how the layouts are read, not the trajectory.
                ours = mkbench.KMeans(6, init="first", max_iter=3, tol=0).fit(device_X)
                reference = mkbench.KMeans(6, init="first", max_iter=3, tol=0, variant=ours.variant_).fit(host_X)
                self.assert_same_fit(ours, reference, self.X)
                self.assertEqual(ours.cluster_centers_.dtype, host_X.dtype)

    def test_dlpack_only_object_is_read_in_place(self):
        self.need_cupy()
        device_X = DLPackOnly(cupy.asarray(self.X))
        self.assertFalse(hasattr(device_X, "__cuda_array_interface__"))
        ours, reference = self.fit_both(device_X, self.X, n_clusters=8, init="k-means++", max_iter=3, tol=0,
                                        random_state=4)
        self.assert_same_fit(ours, reference, self.X)

    def test_no_host_copy_in_resident_memory(self):
        self.need_cupy()
        # A fresh process: its peak resident memory before the fit is about its size then, so a
        # host copy of the 512 MiB array would raise the peak by at least 512 MiB.
        script = textwrap.dedent("""
            import resource, cupy, mkbench
            X = cupy.random.default_rng(1).random((4 << 20, 32), dtype=cupy.float32)
            mkbench.KMeans(8, init="random", max_iter=3, tol=0, random_state=0).fit(X[:1000])  # context, kernels
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            model = mkbench.KMeans(8, init="random", max_iter=3, tol=0, random_state=0).fit(X)
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print((after - before) // 1024, model.variant_)
        """)
        answer = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=dict(os.environ))
        self.assertEqual(answer.returncode, 0, answer.stderr)
        grown_mib, variant = answer.stdout.split()[-2:]
        # The labels (16 MiB of int32) and the answer's arrays come back; the points do not.
        self.assertLess(int(grown_mib), 128, f"peak resident memory grew by {grown_mib} MiB ({variant})")

    def test_bad_device_input(self):
        self.need_cupy()
        bad = cupy.asarray(self.X[:1000])
        bad[123, 4] = cupy.nan
        with self.assertRaisesRegex(ValueError, "NaN at row 123, column 4"):
            mkbench.KMeans(4).fit(bad)
        good = cupy.asarray(self.X[:1000])
        with self.assertRaisesRegex(ValueError, "host"):
            mkbench.KMeans(4, variant="cpu-openmp").fit(good)
        with self.assertRaises(ValueError):
            mkbench.KMeans(4, init=self.X[:3]).fit(good)
        with self.assertRaises(ValueError):
            mkbench.KMeans(4).fit(cupy.asarray(self.X[:1000]).astype(cupy.int32))
        with self.assertRaises(ValueError):
            mkbench.KMeans(4).fit(cupy.zeros((10, 4, 2), dtype=cupy.float32))
        fitted = mkbench.KMeans(4, init="first", max_iter=5).fit(good)
        self.assertEqual(len(fitted.labels_), 1000)
        with self.assertRaises(TypeError):
            fitted.predict(good)


class HostRowsOnDevice(unittest.TestCase):
    """A NumPy array fitted on one GPU with one K goes as device points (python/fit_runner.hpp,
    host_rows_fit_on_device): one upload of its own buffer, no staging copy, the moments and the
    seeding on the GPU. Its answer is the host route's, which a placement over the same single GPU
    still takes."""
    X = points(m=100_000, n=32, seed=3)

    def setUp(self):
        if NO_GPU:
            self.skipTest(NO_GPU)

    def test_one_upload_and_no_staging_copy(self):
        before = _core.point_copies()
        fitted = mkbench.KMeans(8, init="k-means++", max_iter=5, tol=0, random_state=1).fit(self.X)
        after = _core.point_copies()
        self.assertEqual(after["host_to_device"] - before["host_to_device"], self.X.nbytes,
                         "k-means++ on the host would have uploaded the points again")
        self.assertEqual(after["device_to_device"], before["device_to_device"])
        self.assertEqual(fitted.fit_seconds_["staging"], 0)
        # The variants that take no streamed points (kRefuseStreamed) cannot have run it.
        self.assertNotIn(fitted.variant_, ("tensor-multik", "tf32-window", "gemm-tensorcore", "csr-sparse"))

    def test_same_fit_as_the_host_route(self):
        for init in ("first", self.X[500:508]):
            with self.subTest(init=init if isinstance(init, str) else "array"):
                ours = mkbench.KMeans(8, init=init, max_iter=3, tol=0).fit(self.X)
                host = mkbench.KMeans(8, init=init, max_iter=3, tol=0, variant=ours.variant_, device=[0]).fit(self.X)
                self.assertGreater(host.fit_seconds_["staging"], 0, "the placement took the device route")
                DeviceArrays.assert_same_fit(self, ours, host, self.X)

    def test_a_k_range_takes_the_host_route(self):
        fitted = mkbench.KMeans(range(3, 5), init="first", max_iter=3, tol=0).fit(self.X)
        self.assertGreater(fitted.fit_seconds_["staging"], 0, "the range took the device route")


def aligned(ours, reference):
    """ours with its centres (and labels) in the order of reference's nearest centres, where that
    nearest-centre map is a permutation; else ours unchanged (the comparison then fails)."""
    d = ((ours.cluster_centers_[:, None, :].astype(np.float64) - reference.cluster_centers_[None]) ** 2).sum(axis=2)
    order = d.argmin(axis=1)  # ours' centre i is reference's centre order[i]
    if len(set(order.tolist())) != len(order):
        return ours
    copy = copy_module.copy(ours)
    copy.cluster_centers_ = np.empty_like(ours.cluster_centers_)
    copy.cluster_centers_[order] = ours.cluster_centers_
    copy.labels_ = order[ours.labels_].astype(ours.labels_.dtype)
    return copy


class FakeDeviceArray:
    """A __cuda_array_interface__ over a NumPy array's host memory: what the estimator reads from
    the interface, and that the C++ side refuses host memory (or, without a GPU, any device array)."""

    def __init__(self, array, **changes):
        self.array = array
        self.__cuda_array_interface__ = dict(dict(shape=array.shape, typestr=array.dtype.str,
                                                  data=(array.ctypes.data, False), strides=None, version=3,
                                                  stream=None), **changes)


class DLPackOnly:
    """A CUDA array seen only through DLPack (as JAX's arrays are): CuPy's, without its
    __cuda_array_interface__."""

    def __init__(self, array):
        self.array = array

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def __dlpack__(self, **options):
        return self.array.__dlpack__(**options)


class FakeDLPackOnly:
    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0

    def __dlpack__(self, stream=None):
        raise AssertionError("the estimator must not import it")


class InterfaceReading(unittest.TestCase):
    """Runs everywhere: the interface's checks happen before any CUDA work."""
    X = points(m=500, n=4)

    def test_host_memory_or_no_gpu_is_refused(self):
        with self.assertRaisesRegex(ValueError, "needs a CUDA GPU|host memory"):
            mkbench.KMeans(3, init="first").fit(FakeDeviceArray(self.X))

    def test_bad_interfaces(self):
        cases = {
            "3-D": FakeDeviceArray(self.X.reshape(500, 2, 2)),
            "int32": FakeDeviceArray(self.X.astype(np.int32)),
            "masked": FakeDeviceArray(self.X, mask=(0, False)),
            "negative stride": FakeDeviceArray(self.X, strides=(-16, 4)),
            "partial element stride": FakeDeviceArray(self.X, strides=(16, 2)),
        }
        for name, array in cases.items():
            with self.subTest(name), self.assertRaises(ValueError):
                mkbench.KMeans(3).fit(array)

    def test_dlpack_only_cuda_object_and_device_predict(self):
        # Without CuPy or torch to import it in place, a DLPack-only CUDA object is refused
        # before anything reads it (FakeDLPackOnly.__dlpack__ would fail the test).
        kmeans_module = sys.modules[mkbench.KMeans.__module__]
        saved = kmeans_module._dlpack_importers
        kmeans_module._dlpack_importers = lambda: []
        try:
            with self.assertRaisesRegex(TypeError, "DLPack needs CuPy or torch"):
                mkbench.KMeans(3).fit(FakeDLPackOnly())
        finally:
            kmeans_module._dlpack_importers = saved
        fitted = mkbench.KMeans(3, init="first", max_iter=5).fit(self.X)
        with self.assertRaisesRegex(TypeError, "host arrays"):
            fitted.predict(FakeDeviceArray(self.X))


if __name__ == "__main__":
    unittest.main()
