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


def assert_labels_equal_but_ties(test, X, labels, centres, reference_labels, reference_centres, share=1000):
    """Labels equal but for ties that the two fits' centre difference explains: a point labelled
    a by `centres` and b by `reference_centres` has 0 <= |x - a| - |x - b| <= 2 * max_k
    |centres_k - reference_k| under the reference's centres (triangle inequality), plus float32
    rounding of the distances. At most one point in `share` may differ."""
    differ = np.flatnonzero(labels != reference_labels)
    test.assertLessEqual(len(differ), max(1, len(X) // share), "labels differ beyond near-ties")
    if len(differ):
        reference_centres = np.asarray(reference_centres, np.float64)
        shift = float(np.sqrt(((np.asarray(centres, np.float64) - reference_centres) ** 2).sum(axis=1)).max())
        d = np.sqrt(squared_distances(np.asarray(X)[differ], reference_centres))
        rows = np.arange(len(differ))
        gap = d[rows, labels[differ]] - d[rows, reference_labels[differ]]
        rounding = 1e-5 * (1 + d.min(axis=1))
        test.assertTrue(np.all(gap <= 2 * shift + rounding), f"not near-ties: gap {gap}, centre shift {shift}")
