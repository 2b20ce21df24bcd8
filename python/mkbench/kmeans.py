"""mkbench.KMeans: scikit-learn's estimator interface over `mkbench fit`'s Lloyd loop.

The iterations run in C++ (mkbench._core.fit, which runs apps/fit's loop on the GPU's
variant when there is a GPU and on cpu-openmp without); this layer only checks and converts
the input, as scikit-learn's KMeans does, and keeps the fitted attributes. predict, transform
and score are one distance pass over the fitted centres, done here with NumPy.
"""
import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

try:  # scikit-learn >= 1.6: a function (BaseEstimator._validate_data is gone from 1.7 on)
    from sklearn.utils.validation import validate_data as _sklearn_validate_data
except ImportError:  # Debian's 1.2
    _sklearn_validate_data = None

from mkbench import _core

_SEEDINGS = ("k-means++", "k-means||", "random", "first")
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_CUDA_DLPACK_DEVICES = (2, 3, 13)  # DLPack's kDLCUDA, kDLCUDAHost, kDLCUDAManaged


def _validate(estimator, X, *, reset, allow_nonfinite=False):
    """scikit-learn's input validation (float64/float32, C order, n_features_in_), in whichever
    form the installed scikit-learn has: the GPU machine runs 1.9, Debian ships 1.2."""
    if (reset and allow_nonfinite and type(X) is np.ndarray and X.ndim == 2 and X.dtype in _FLOAT_DTYPES
            and X.flags.c_contiguous and X.shape[0] >= 1 and X.shape[1] >= 1):
        # What scikit-learn's validation does with a plain C-ordered float array: it records the
        # width and drops old feature names. Its checks cost about 1 ms a fit, against the goal of
        # under 1 ms of Python overhead (python/bench/bench_vs_sklearn.py).
        estimator.n_features_in_ = X.shape[1]
        if hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
        return X
    options = {"dtype": [np.float64, np.float32], "order": "C", "reset": reset}
    if _sklearn_validate_data is not None:
        if allow_nonfinite:
            options["ensure_all_finite"] = False
        return _sklearn_validate_data(estimator, X, **options)
    if allow_nonfinite:
        options["force_all_finite"] = False
    return estimator._validate_data(X, **options)


def _cuda_dlpack(X):
    """Whether X says, through DLPack, that it lives in CUDA memory."""
    if isinstance(X, np.ndarray) or not hasattr(X, "__dlpack_device__"):
        return False
    return X.__dlpack_device__()[0] in _CUDA_DLPACK_DEVICES


def _dlpack_importers():
    """The libraries that take a CUDA DLPack object in place (no copy), in the order tried; each
    gives an array with __cuda_array_interface__."""
    importers = []
    try:
        import cupy
        importers.append(("cupy.from_dlpack", cupy.from_dlpack))
    except Exception:  # ImportError, or CUDA libraries missing
        pass
    try:
        import torch
        importers.append(("torch.from_dlpack", torch.from_dlpack))
    except Exception:
        pass
    return importers


def _import_dlpack(X):
    """A CUDA array reached only through DLPack, imported in place by CuPy or torch."""
    importers = _dlpack_importers()
    if not importers:
        raise TypeError("a CUDA array reached only through DLPack needs CuPy or torch to read it in place, and "
                        "neither is importable: pass a NumPy array or one with __cuda_array_interface__")
    name, importer = importers[0]
    try:
        return importer(X)
    except Exception as error:
        raise TypeError(f"{name} could not import the DLPack array in place: {error}") from error


def _on_device(X):
    try:
        return getattr(X, "__cuda_array_interface__", None) is not None or _cuda_dlpack(X)
    except RuntimeError:  # torch: a tensor that requires grad
        return True


def _device_array(X):
    """(arguments, owner): X's __cuda_array_interface__ (CuPy, torch.cuda, Numba; a DLPack-only
    CUDA object is first imported in place by CuPy or torch) as _core.fit_device's leading
    arguments, and the object that holds the memory while they are used; (None, None) for an
    array in host memory."""
    try:
        interface = getattr(X, "__cuda_array_interface__", None)
    except RuntimeError as error:  # torch: a tensor that requires grad
        raise ValueError(f"cannot read the device array: {error}") from error
    if interface is None:
        if not _cuda_dlpack(X):
            return None, None
        X = _import_dlpack(X)
        interface = X.__cuda_array_interface__
    shape = tuple(interface["shape"])
    if len(shape) != 2:
        raise ValueError(f"expected a 2-D array of points (M x N), got shape {shape}")
    typestr = interface["typestr"]
    if typestr not in ("<f4", "<f8"):
        raise ValueError(f"device arrays must be float32 or float64, got typestr {typestr!r}")
    if interface.get("mask") is not None:
        raise ValueError("masked device arrays are not supported")
    itemsize = int(typestr[2:])
    m, n = int(shape[0]), int(shape[1])
    strides = interface.get("strides")
    if strides is None:
        row_stride, col_stride = n, 1
    else:
        if any(stride < 0 or stride % itemsize for stride in strides):
            raise ValueError(f"device array strides {tuple(strides)} are negative or not whole elements")
        row_stride, col_stride = strides[0] // itemsize, strides[1] // itemsize
    stream = interface.get("stream")
    return dict(pointer=int(interface["data"][0]), m=m, n=n, row_stride=int(row_stride), col_stride=int(col_stride),
                float64=typestr == "<f8", stream=int(stream or 0)), X


def _k_range(n_clusters):
    """(kmin, kmax, is_range) of n_clusters: an int, or a range with step 1 or a list/tuple of
    consecutive increasing ints (fitted together, as `mkbench fit --k kmin..kmax`)."""
    accepted = "an integer of at least 1, a range with step 1 (range(3, 8)) or a list/tuple of consecutive integers"

    def integer(value):
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)

    if integer(n_clusters):
        if n_clusters < 1:
            raise ValueError(f"n_clusters must be {accepted}, got {n_clusters!r}")
        return int(n_clusters), int(n_clusters), False
    if isinstance(n_clusters, range):
        if n_clusters.step != 1:
            raise ValueError(f"n_clusters {n_clusters!r} steps by {n_clusters.step}: a fit takes every K of a range "
                             f"(`mkbench fit --k A..B`); n_clusters must be {accepted}")
        ks = list(n_clusters)
    elif isinstance(n_clusters, (list, tuple)) and all(integer(value) for value in n_clusters):
        ks = [int(value) for value in n_clusters]
        if any(b != a + 1 for a, b in zip(ks, ks[1:])):
            raise ValueError(f"n_clusters {n_clusters!r} is not consecutive: n_clusters must be {accepted}")
    else:
        raise ValueError(f"n_clusters must be {accepted}, got {n_clusters!r}")
    if not ks:
        raise ValueError(f"n_clusters {n_clusters!r} is empty: n_clusters must be {accepted}")
    if ks[0] < 1:
        raise ValueError(f"n_clusters {n_clusters!r} starts below 1: n_clusters must be {accepted}")
    return ks[0], ks[-1], True


def _placement(device):
    """device as `mkbench --device`'s text (harness/parallel/placement.hpp), or None for an int
    (one device, as before lists were taken). The C++ side parses and checks it, with the CLI's
    messages (an empty list is the empty text, which it refuses)."""
    if isinstance(device, numbers.Integral) and not isinstance(device, bool):
        return None
    if isinstance(device, str):
        return device
    if isinstance(device, (list, tuple)):
        if not all(isinstance(value, numbers.Integral) and not isinstance(value, bool) for value in device):
            raise ValueError(f"device as a list takes GPU ordinals (integers), got {device!r}")
        return ",".join(str(int(value)) for value in device)
    raise ValueError(f"device must be a GPU ordinal, a list of them, \"all\", \"cpu\" or \"cpu:N\", got {device!r}")


class KMeans(ClusterMixin, TransformerMixin, BaseEstimator):
    """Lloyd's k-means with scikit-learn's parameters and convergence rule.

    n_clusters: K, or a range of K (range(3, 8), or a list of consecutive integers) fitted
    together in one multi-K fit, as `mkbench fit --k 3..7`: best_k_ is the K the CLI chooses
    (the largest Calinski-Harabasz index), cluster_centers_, labels_, inertia_ and n_iter_ are
    its fit, and results_ lists every K's (with the scores fit.json records).
    init: "k-means++" (scikit-learn's greedy seeding), "k-means||" (Bahmani et al.'s scalable
    k-means++, on the CPU: NumPy input), "random" (K distinct points), "first"
    (the first K points) or an (n_clusters, n_features) array; for a range, a (max K,
    n_features) array whose first K rows start each K (`fit --init npy:PATH`'s rows). n_init
    seedings (the lowest inertia wins, per K; one for an array). max_iter, tol: as
    scikit-learn (tol is relative to the data's mean per-feature variance). random_state:
    None, an int or a RandomState, drawing the seed of the seeding. variant: "auto" or a
    variant name (`mkbench list`).
    device: the CUDA ordinal; a list of them or "all" (the rows split over the GPUs, one
    shard each, all-reduced: `mkbench run --device 0,1`); "cpu" or "cpu:N" (the host CPU over
    N shards). Several shards refuse a step that leaves a cluster empty (docs/multi-gpu.md).

    The data run in float32 (float64 input is converted); cluster_centers_ come back in the
    input's float dtype.
    """

    def __init__(self, n_clusters=8, *, init="k-means++", n_init=1, max_iter=300, tol=1e-4,
                 random_state=None, variant="auto", device=0):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.variant = variant
        self.device = device

    def _check_params(self, n_features):
        kmin, kmax, is_range = _k_range(self.n_clusters)
        for name in ("n_init", "max_iter"):
            value = getattr(self, name)
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer of at least 1, got {value!r}")
        if not isinstance(self.tol, numbers.Real) or not self.tol >= 0:
            raise ValueError(f"tol must be a number of at least 0, got {self.tol!r}")
        if not isinstance(self.variant, str):
            raise TypeError(f"variant must be a string (auto or a variant name), got {type(self.variant).__name__}")
        if isinstance(self.init, str):
            if self.init not in _SEEDINGS:
                raise ValueError(f"init must be one of {', '.join(_SEEDINGS)} or an array, got {self.init!r}")
            return None
        if callable(self.init):
            raise TypeError("init as a callable is not supported: give k-means++, random, first or an array")
        initial = np.asarray(self.init)
        if initial.dtype.kind not in "fiu":
            raise TypeError(f"init array must be numeric, got dtype {initial.dtype}")
        if initial.shape != (kmax, n_features):
            expected = "(max(n_clusters), n_features): its first K rows start each K" if is_range else \
                "(n_clusters, n_features)"
            raise ValueError(f"init array has shape {initial.shape}, expected {expected} = ({kmax}, {n_features})")
        if not np.all(np.isfinite(initial)):
            raise ValueError("init array contains NaN or infinity")
        return np.ascontiguousarray(initial, dtype=np.float32)

    def _seed(self):
        if isinstance(self.random_state, numbers.Integral) and not isinstance(self.random_state, bool):
            if self.random_state < 0:
                raise ValueError(f"random_state must be non-negative, got {self.random_state}")
            return int(self.random_state)
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    # No sample_weight: mkbench's Lloyd weighs every point the same (scikit-learn's checks then
    # leave the weight checks out).
    def fit(self, X, y=None):
        """Cluster X (n_samples, n_features); y is ignored.

        X in device memory (__cuda_array_interface__: CuPy, torch.cuda; or DLPack alone, imported
        in place by CuPy or torch) is consumed there: one
        device-to-device copy into the GPU variant's buffer, the moments and the seeding on the
        device (docs/python.md, "Device arrays")."""
        device_array, owner = _device_array(X)
        if device_array is not None:
            return self._fit_device(device_array, owner)
        # Non-finite values reach the C++ core, which names the first offending row and column.
        X = _validate(self, X, reset=True, allow_nonfinite=True)
        initial = self._check_params(X.shape[1])
        kmin, kmax, _ = _k_range(self.n_clusters)
        placement = _placement(self.device)
        points = np.ascontiguousarray(X, dtype=np.float32)
        result = _core.fit(points, kmin, self.init if initial is None else "array", initial,
                           int(self.max_iter), float(self.tol), int(self.n_init), self._seed(), self.variant,
                           int(self.device) if placement is None else 0, k_max=kmax, placement=placement)
        self._keep(result, X.dtype)
        return self

    def _fit_device(self, array, owner):  # owner holds the memory array points into
        n = array["n"]
        initial = self._check_params(n)
        kmin, kmax, _ = _k_range(self.n_clusters)
        if _placement(self.device) is not None:
            raise ValueError(f"device={self.device!r} takes a host (NumPy) array: the shards copy their rows from "
                             "host memory; a device array is fitted on the one GPU that holds it (device=int)")
        result = _core.fit_device(**array, k=kmin, init=self.init if initial is None else "array",
                                  initial=initial, max_iter=int(self.max_iter), tol=float(self.tol),
                                  n_init=int(self.n_init), seed=self._seed(), variant=self.variant,
                                  device=int(self.device), k_max=kmax)
        self.n_features_in_ = n
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self._keep(result, np.float64 if array["float64"] else np.float32)
        return self

    def _keep(self, result, dtype):
        self.cluster_centers_ = result["cluster_centers"].astype(dtype, copy=False)
        self.labels_ = result["labels"]
        self.inertia_ = float(result["inertia"])
        self.n_iter_ = int(result["n_iter"])
        self.variant_ = result["variant"]
        self.device_ = result["device"]
        self.shards_ = int(result.get("shards", 1))
        self.fit_seconds_ = dict(result["seconds"])
        if "per_k" in result:  # a range: the CLI's choice, and every K's fit (fit.json's per_k)
            self.best_k_ = int(result["best_k"])
            self.results_ = [self._k_result(entry, dtype) for entry in result["per_k"]]
        else:
            for stale in ("best_k_", "results_"):
                if hasattr(self, stale):
                    delattr(self, stale)

    @staticmethod
    def _k_result(entry, dtype):
        return {"k": int(entry["k"]), "cluster_centers_": entry["cluster_centers"].astype(dtype, copy=False),
                "labels_": entry["labels"], "inertia_": float(entry["inertia"]), "n_iter_": int(entry["n_iter"]),
                "converged": bool(entry["converged"]), "nonempty_clusters": entry["nonempty_clusters"],
                "calinski_harabasz": entry["calinski_harabasz"], "davies_bouldin": entry["davies_bouldin"],
                "silhouette": entry["silhouette"]}

    def _distances_squared(self, X):
        check_is_fitted(self)
        if _on_device(X):
            raise TypeError("predict, transform and score take host arrays (labels_ holds the fitted points' "
                            "labels): copy with cupy.asnumpy(X) or X.cpu().numpy()")
        X = _validate(self, X, reset=False)
        # FP64 differences: exact enough that the nearest centre is the nearest (ties go to the
        # lowest index, as numpy.argmin and scikit-learn choose).
        centers = self.cluster_centers_.astype(np.float64)
        distances = np.empty((X.shape[0], centers.shape[0]))
        rows = max(1, (1 << 22) // max(1, centers.size))  # about 32 MiB of differences at a time
        for start in range(0, X.shape[0], rows):
            block = X[start:start + rows].astype(np.float64)
            distances[start:start + rows] = ((block[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2)
        return distances, X.dtype

    def predict(self, X):
        """The index of the nearest fitted centre for each row of X."""
        distances, _ = self._distances_squared(X)
        return distances.argmin(axis=1).astype(np.int32)

    def fit_predict(self, X, y=None):
        return self.fit(X).labels_

    def transform(self, X):
        """Euclidean distances from each row of X to every fitted centre."""
        distances, dtype = self._distances_squared(X)
        return np.sqrt(distances).astype(dtype, copy=False)

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)

    def score(self, X, y=None):
        """Minus the sum of squared distances from each row of X to its nearest centre."""
        distances, _ = self._distances_squared(X)
        return -float(distances.min(axis=1).sum())

    def _more_tags(self):  # scikit-learn < 1.6
        return {"preserves_dtype": [np.float64, np.float32]}

    def __sklearn_tags__(self):  # scikit-learn >= 1.6
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
