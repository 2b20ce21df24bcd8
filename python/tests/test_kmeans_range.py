"""mkbench.KMeans over a range of K (one multi-K fit, `mkbench fit --k A..B`) and over several
devices (`--device 0,1|all|cpu:N`): every K of a range against scikit-learn's KMeans
(algorithm="lloyd") from the same start, best_k_ against the CLI's on the same data and start,
host shards (cpu:3) against one device, and the errors for bad ranges and devices. Two GPUs
against one where there are two (skipped, saying so, elsewhere). Run by ctest (Python.KMeans).
"""
import json
import os
import pathlib
import pickle
import re
import subprocess
import tempfile
import unittest

import numpy as np
from sklearn.base import clone
from sklearn.cluster import KMeans as SkKMeans
from sklearn.datasets import make_blobs

import mkbench
from support import ValueErrors, assert_labels_equal_but_ties, blobs, squared_distances


def start_rows(X, count, seed):
    """count distinct rows of X: a start every K of a range shares (K takes the first K)."""
    return X[np.random.default_rng(seed).choice(len(X), size=count, replace=False)]


class Tolerances(unittest.TestCase):
    def assert_same_fit(self, X, centers, labels, inertia, theirs_centers, theirs_labels, theirs_inertia, rtol=1e-4):
        """test_kmeans.py's tolerance: centres within rtol of the data's scale, labels equal
        except for points (to rounding) as near to two centres, inertia within rtol."""
        np.testing.assert_allclose(centers, theirs_centers, rtol=0, atol=rtol * np.abs(X).max())
        differ = np.flatnonzero(labels != theirs_labels)
        self.assertLessEqual(len(differ), max(1, len(X) // 1000), "labels differ beyond ties")
        if len(differ):
            d = squared_distances(X[differ], theirs_centers)
            rows = np.arange(len(differ))
            gap = np.abs(d[rows, labels[differ]] - d[rows, theirs_labels[differ]])
            self.assertTrue(np.all(gap <= 1e-4 * (1 + d.min(axis=1))), f"not ties: {gap}")
        self.assertAlmostEqual(inertia / theirs_inertia, 1.0, delta=rtol)

    def assert_same_model(self, ours, theirs, X):
        self.assert_same_fit(X, ours.cluster_centers_, ours.labels_, ours.inertia_, theirs.cluster_centers_,
                             theirs.labels_, theirs.inertia_)


class RangeAgainstSklearn(Tolerances):
    def test_every_k_of_a_range_matches_sklearn_from_the_same_start(self):
        X = blobs()
        init = start_rows(X, 7, seed=1)
        model = mkbench.KMeans(range(3, 8), init=init, max_iter=300, tol=1e-4).fit(X)
        self.assertEqual([result["k"] for result in model.results_], [3, 4, 5, 6, 7])
        for result in model.results_:
            k = result["k"]
            with self.subTest(k=k):
                theirs = SkKMeans(k, init=init[:k], n_init=1, max_iter=300, tol=1e-4, algorithm="lloyd").fit(X)
                self.assert_same_fit(X, result["cluster_centers_"], result["labels_"], result["inertia_"],
                                     theirs.cluster_centers_, theirs.labels_, theirs.inertia_)
                self.assertLessEqual(abs(result["n_iter_"] - theirs.n_iter_), 1)
                self.assertEqual(result["cluster_centers_"].shape, (k, X.shape[1]))

    def test_the_best_ks_fit_is_the_estimators(self):
        X = blobs(m=2000, n=4, centers=4, seed=3)
        model = mkbench.KMeans(range(2, 7), init=start_rows(X, 6, seed=2)).fit(X)
        best = next(result for result in model.results_ if result["k"] == model.best_k_)
        np.testing.assert_array_equal(model.cluster_centers_, best["cluster_centers_"])
        np.testing.assert_array_equal(model.labels_, best["labels_"])
        self.assertEqual((model.inertia_, model.n_iter_), (best["inertia_"], best["n_iter_"]))
        # predict, transform and score are the best K's: one distance pass over its centres.
        new = np.random.default_rng(5).normal(size=(300, 4)) * 6
        d = squared_distances(new, best["cluster_centers_"])
        np.testing.assert_array_equal(model.predict(new), d.argmin(axis=1))
        np.testing.assert_allclose(model.transform(new), np.sqrt(d), rtol=1e-12)
        self.assertAlmostEqual(model.score(new), -d.min(axis=1).sum(), delta=1e-9 * d.sum())

    def test_the_first_k_rows_of_an_init_array_start_each_k(self):
        X = blobs(m=1500, n=3, centers=4, seed=4)
        init = start_rows(X, 6, seed=3)
        ranged = mkbench.KMeans(range(4, 7), init=init, variant="cpu-openmp").fit(X)
        for result in ranged.results_:
            k = result["k"]
            alone = mkbench.KMeans(k, init=init[:k], variant="cpu-openmp").fit(X)
            with self.subTest(k=k):
                np.testing.assert_array_equal(result["labels_"], alone.labels_)
                np.testing.assert_array_equal(result["cluster_centers_"], alone.cluster_centers_)
                self.assertEqual(result["n_iter_"], alone.n_iter_)

    def test_a_list_of_consecutive_ks_is_the_range(self):
        X = blobs(m=1000, n=3, centers=3, seed=5)
        init = start_rows(X, 5, seed=4)
        ranged = mkbench.KMeans(range(3, 6), init=init, variant="cpu-openmp").fit(X)
        listed = mkbench.KMeans([3, 4, 5], init=init, variant="cpu-openmp").fit(X)
        self.assertEqual(ranged.best_k_, listed.best_k_)
        for a, b in zip(ranged.results_, listed.results_):
            np.testing.assert_array_equal(a["labels_"], b["labels_"])

    def test_params_clone_and_pickle_keep_the_range(self):
        model = mkbench.KMeans(range(3, 6), init="first", device="cpu:2", variant="cpu-openmp")
        self.assertEqual(model.get_params()["n_clusters"], range(3, 6))
        copy = clone(model)
        self.assertEqual(copy.get_params(), model.get_params())
        X = blobs(m=600, n=3, centers=3, seed=6)
        model.fit(X)
        restored = pickle.loads(pickle.dumps(model))
        self.assertEqual(restored.best_k_, model.best_k_)
        self.assertEqual(len(restored.results_), 3)
        np.testing.assert_array_equal(restored.predict(X), model.labels_)

    def test_one_k_has_no_range_attributes(self):
        X = blobs(m=600, n=3, centers=3, seed=7)
        model = mkbench.KMeans(range(2, 5), init="first").fit(X)
        self.assertTrue(hasattr(model, "best_k_"))
        model.set_params(n_clusters=3).fit(X)
        self.assertFalse(hasattr(model, "best_k_"))
        self.assertFalse(hasattr(model, "results_"))
        self.assertEqual(model.cluster_centers_.shape, (3, 3))


class RangeAgainstTheCli(unittest.TestCase):
    """best_k_ and every K's scores are the CLI's: `mkbench fit --k A..B --init npy:...` on the
    same points and start (cpu-openmp on both sides, so the same kernels run)."""

    def cli_fit(self, X, init, k_text, folder):
        binary = os.environ.get("MKBENCH_BINARY")
        if not binary:
            self.skipTest("MKBENCH_BINARY is not set (ctest sets it): best_k_ is not compared with the CLI's")
        folder = pathlib.Path(folder)
        np.save(folder / "points.npy", X.astype(np.float32))
        np.save(folder / "init.npy", init.astype(np.float32))
        run = subprocess.run([binary, "fit", "--dataset", f"npy:{folder / 'points.npy'}", "--k", k_text,
                              "--init", f"npy:{folder / 'init.npy'}", "--variant", "cpu-openmp", "--quiet",
                              "--seed", "42", "--out", str(folder / "out")],
                             check=True, capture_output=True, text=True)
        printed = re.search(r"^best_k: (\d+)", run.stdout, re.M)
        self.assertIsNotNone(printed, run.stdout)
        return int(printed.group(1)), json.loads((folder / "out" / "fit.json").read_text())

    def check(self, X, kmin, kmax, seed):
        init = start_rows(X, kmax, seed)
        with tempfile.TemporaryDirectory() as folder:
            cli_best, document = self.cli_fit(X, init, f"{kmin}..{kmax}", folder)
        model = mkbench.KMeans(range(kmin, kmax + 1), init=init, variant="cpu-openmp", random_state=42).fit(X)
        self.assertEqual(model.best_k_, cli_best)
        self.assertEqual(document["best_k"], cli_best)
        self.assertEqual(len(model.results_), len(document["per_k"]))
        for ours, theirs in zip(model.results_, document["per_k"]):
            self.assertEqual(ours["k"], theirs["k"])
            self.assertEqual(ours["n_iter_"], theirs["iterations"])
            self.assertEqual(ours["nonempty_clusters"], theirs["nonempty_clusters"])
            for name in ("calinski_harabasz", "davies_bouldin", "silhouette"):
                self.assertAlmostEqual(ours[name] / theirs[name], 1.0, delta=1e-9, msg=f"K={ours['k']} {name}")
            self.assertAlmostEqual(ours["inertia_"] / theirs["inertia"], 1.0, delta=1e-9)

    def test_best_k_on_blobs(self):
        self.check(blobs(m=2500, n=5, centers=5, seed=8), 2, 8, seed=5)

    def test_best_k_on_uniform_points(self):
        X = np.random.default_rng(9).random((3000, 3), dtype=np.float32).astype(np.float64)
        self.check(X, 3, 9, seed=6)


class HostShards(Tolerances):
    """device="cpu:3": cpu-openmp over three in-process shards, all-reduced each step (the path
    several GPUs take), against one device."""

    def test_three_host_shards_give_one_devices_fit(self):
        X = blobs(m=2003, n=5, centers=5, seed=10)  # 2003 rows: no shard count divides them
        init = start_rows(X, 7, seed=7)
        for n_clusters, start in ((5, init[:5]), (range(3, 8), init)):
            one = mkbench.KMeans(n_clusters, init=start, variant="cpu-openmp").fit(X)
            three = mkbench.KMeans(n_clusters, init=start, variant="cpu-openmp", device="cpu:3").fit(X)
            with self.subTest(n_clusters=n_clusters):
                self.assertEqual((one.shards_, three.shards_), (1, 3))
                np.testing.assert_array_equal(three.labels_, one.labels_)
                self.assert_same_model(three, one, X)
                if isinstance(n_clusters, range):
                    self.assertEqual(three.best_k_, one.best_k_)
                    for a, b in zip(three.results_, one.results_):
                        np.testing.assert_array_equal(a["labels_"], b["labels_"])
                        self.assert_same_fit(X, a["cluster_centers_"], a["labels_"], a["inertia_"],
                                             b["cluster_centers_"], b["labels_"], b["inertia_"])

    def test_a_step_that_empties_a_cluster_is_refused_over_shards(self):
        # A start far from every point receives none: one device moves it to the farthest point
        # (scikit-learn's rule); shards would each pick their own, so they refuse.
        X = blobs(m=900, n=2, centers=3, seed=11)
        init = np.vstack([X[:2], [[1e6, 1e6]]])
        mkbench.KMeans(3, init=init, variant="cpu-openmp").fit(X)
        with self.assertRaises(ValueError) as caught:
            mkbench.KMeans(3, init=init, variant="cpu-openmp", device="cpu:2").fit(X)
        self.assertIn("empty cluster", str(caught.exception))


class FakeDeviceArray:
    """A __cuda_array_interface__ the estimator refuses before reading any memory."""

    def __init__(self, m, n):
        self.__cuda_array_interface__ = {"shape": (m, n), "typestr": "<f4", "data": (0, False), "version": 3}


class BadInput(ValueErrors, unittest.TestCase):
    X = blobs(m=200, n=3, centers=2, seed=12)

    def test_ranges_other_than_consecutive_ks(self):
        self.assert_value_error("steps by 2", lambda: mkbench.KMeans(range(3, 9, 2)).fit(self.X))
        self.assert_value_error("is empty", lambda: mkbench.KMeans(range(5, 3)).fit(self.X))
        self.assert_value_error("is empty", lambda: mkbench.KMeans([]).fit(self.X))
        self.assert_value_error("not consecutive", lambda: mkbench.KMeans([3, 5]).fit(self.X))
        self.assert_value_error("starts below 1", lambda: mkbench.KMeans(range(0, 3)).fit(self.X))
        self.assert_value_error("n_clusters must be", lambda: mkbench.KMeans({3, 4}).fit(self.X))

    def test_a_k_above_m_inside_a_range(self):
        self.assert_value_error("exceeds the number of points M=50",
                                lambda: mkbench.KMeans(range(3, 60)).fit(self.X[:50]))

    def test_an_init_array_of_other_than_max_k_rows(self):
        self.assert_value_error("max(n_clusters)",
                                lambda: mkbench.KMeans(range(2, 5), init=self.X[:3]).fit(self.X))

    def test_devices_that_do_not_exist(self):
        gpus = mkbench.gpu_count()
        expected = "--device 99 does not exist" if gpus else "names GPUs, and this machine has none"
        self.assert_value_error(expected, lambda: mkbench.KMeans(2, device=[0, 99]).fit(self.X))
        if gpus == 0:
            self.assert_value_error("names GPUs, and this machine has none",
                                    lambda: mkbench.KMeans(2, device="all").fit(self.X))
        # One ordinal: 0 alone is the host CPU on a machine without a GPU.
        expected = "--device 99 does not exist" if gpus else "--device 99 names a GPU, and this machine has none"
        self.assert_value_error(expected, lambda: mkbench.KMeans(2, device=99).fit(self.X))

    def test_malformed_devices(self):
        self.assert_value_error("--device expects a GPU ordinal", lambda: mkbench.KMeans(2, device=[]).fit(self.X))
        self.assert_value_error("names GPU 0 twice", lambda: mkbench.KMeans(2, device=[0, 0]).fit(self.X))
        self.assert_value_error("cpu:N needs N >= 1", lambda: mkbench.KMeans(2, device="cpu:0").fit(self.X))
        self.assert_value_error("--device expects", lambda: mkbench.KMeans(2, device=[0, -1]).fit(self.X))
        self.assert_value_error("device must be", lambda: mkbench.KMeans(2, device=1.5).fit(self.X))
        self.assert_value_error("GPU ordinals", lambda: mkbench.KMeans(2, device=[0, "1"]).fit(self.X))

    def test_more_shards_than_points_per_k(self):
        self.assert_value_error("fewer than K=4",
                                lambda: mkbench.KMeans(4, variant="cpu-openmp", device="cpu:3").fit(self.X[:10]))

    def test_device_arrays_take_one_device(self):
        array = FakeDeviceArray(100, 3)
        self.assert_value_error("takes a host (NumPy) array", lambda: mkbench.KMeans(2, device=[0, 1]).fit(array))
        self.assert_value_error("takes a host (NumPy) array", lambda: mkbench.KMeans(2, device="cpu:2").fit(array))


TWO_GPUS = None if mkbench.gpu_count() >= 2 else \
    f"fewer than 2 CUDA GPUs ({mkbench.gpu_count()}): device=[0, 1] needs two (`tests/device.sh build python` on a 2-GPU kind runs it)"


@unittest.skipIf(TWO_GPUS, TWO_GPUS)
class TwoGpus(unittest.TestCase):
    """device=[0, 1] against device=0, for kernels whose per-point arithmetic does not depend on
    the shard (tests/test_sharded_gpu.cpp holds the same variants to one ulp per step), over ten
    steps from the same centres. Not to convergence: a GPU's atomics sum in another order each
    run, and where a K cuts through a blob a one-ulp difference can flip a point near a tie and
    lead the two fits to different fixed points (208 of 200,003 labels of one K of 3..7 with
    shared-atomics, on two H200s at e7c9734). Over ten steps the labels are equal but for ties
    the centres' difference explains, and the centres agree to 1e-5 of the data's scale."""

    X = make_blobs(n_samples=200_003, n_features=8, centers=6, random_state=21)[0].astype(np.float32)

    def test_two_gpus_give_one_gpus_fit(self):
        init = start_rows(self.X, 7, seed=8)
        for variant in ("registers-multik", "shared-atomics"):
            for n_clusters, start in ((5, init[:5]), (range(3, 8), init)):
                one = mkbench.KMeans(n_clusters, init=start, max_iter=10, tol=0, variant=variant, device=0).fit(self.X)
                two = mkbench.KMeans(n_clusters, init=start, max_iter=10, tol=0, variant=variant,
                                     device=[0, 1]).fit(self.X)
                with self.subTest(variant=variant, n_clusters=n_clusters):
                    self.assertEqual((one.variant_, two.variant_, one.shards_, two.shards_), (variant, variant, 1, 2))
                    fits = zip(two.results_, one.results_) if isinstance(n_clusters, range) else \
                        [({"labels_": two.labels_, "cluster_centers_": two.cluster_centers_, "n_iter_": two.n_iter_},
                          {"labels_": one.labels_, "cluster_centers_": one.cluster_centers_, "n_iter_": one.n_iter_})]
                    for got, want in fits:
                        assert_labels_equal_but_ties(self, self.X, got["labels_"], got["cluster_centers_"],
                                                     want["labels_"], want["cluster_centers_"], share=10000)
                        np.testing.assert_allclose(got["cluster_centers_"], want["cluster_centers_"], rtol=0,
                                                   atol=1e-5 * float(np.abs(self.X).max()))
                        # tol=0 stops a fit early only where a step moves no centre at all.
                        self.assertLessEqual(abs(got["n_iter_"] - want["n_iter_"]), 3)
                    if isinstance(n_clusters, range):
                        self.assertEqual(two.best_k_, one.best_k_)

    def test_all_takes_every_gpu(self):
        model = mkbench.KMeans(4, init="first", max_iter=10, device="all").fit(self.X)
        self.assertEqual(model.shards_, mkbench.gpu_count())
        self.assertNotEqual(model.variant_, "cpu-openmp")


if __name__ == "__main__":
    unittest.main()
