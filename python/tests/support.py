"""What the package's test files share: the data they fit and the checks they repeat."""
import numpy as np
from sklearn.datasets import make_blobs


def blobs(m=3000, n=6, centers=5, seed=0):
    X, _ = make_blobs(n_samples=m, n_features=n, centers=centers, cluster_std=1.5, random_state=seed)
    return X.astype(np.float32).astype(np.float64)  # exact in float32: both sides see the same points


def squared_distances(X, centers):
    X = np.asarray(X, np.float64)
    centers = np.asarray(centers, np.float64)
    return ((X[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2)


class ValueErrors:
    """A unittest.TestCase mixin: assert_value_error(text, call) checks call() raises ValueError
    whose message contains text."""

    def assert_value_error(self, text, call):
        with self.assertRaises(ValueError) as caught:
            call()
        self.assertIn(text, str(caught.exception))
