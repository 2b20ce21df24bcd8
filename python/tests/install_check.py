"""`cmake --install --component python` puts a package that a Python outside the build tree imports.

Usage: install_check.py CMAKE BUILD_DIR INSTALL_DIR. The component is installed under a
temporary DESTDIR (INSTALL_DIR is absolute: the interpreter's sitearch; a relative one lands
under the prefix, given here as /usr), then this interpreter is started in an empty folder with
PYTHONPATH at the staged site folder only, imports mkbench, checks that it came from there and
fits a small problem against scikit-learn's KMeans from the same centres.
"""
import os
import pathlib
import subprocess
import sys
import tempfile

CHILD = r"""
import sys
import numpy as np
from sklearn.cluster import KMeans as SkKMeans
import mkbench
site = sys.argv[1]
assert mkbench.__file__.startswith(site + "/mkbench/"), mkbench.__file__
assert mkbench._core.__file__.startswith(site + "/mkbench/"), mkbench._core.__file__
X = np.random.default_rng(5).random((3000, 4), dtype=np.float32).astype(np.float64)
ours = mkbench.KMeans(4, init=X[:4], max_iter=10, tol=0).fit(X)
theirs = SkKMeans(4, init=X[:4], n_init=1, max_iter=10, tol=0, algorithm="lloyd").fit(X)
gap = np.abs(ours.cluster_centers_ - theirs.cluster_centers_).max()
assert gap < 1e-4, gap
print("installed", mkbench.__file__, "centre gap", gap)
"""


def main():
    cmake, build, install_dir = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="mkbench-install-") as root:
        env = dict(os.environ, DESTDIR=root)
        subprocess.run([cmake, "--install", build, "--component", "python", "--prefix", "/usr"], env=env,
                       check=True)
        folder = install_dir if os.path.isabs(install_dir) else os.path.join("/usr", install_dir)
        site = os.path.join(root, folder.lstrip("/"))
        staged = sorted(p.name for p in pathlib.Path(site, "mkbench").iterdir())
        print("staged:", staged)
        expected = {p.name for p in pathlib.Path(__file__).resolve().parents[1].joinpath("mkbench").glob("*.py")}
        missing = expected - set(staged)
        if missing or not any(name.startswith("_core") and name.endswith(".so") for name in staged):
            sys.exit(f"the install lacks {sorted(missing) or 'the _core module'}: {staged}")
        child_env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "DESTDIR")}
        child_env["PYTHONPATH"] = site
        with tempfile.TemporaryDirectory() as elsewhere:
            subprocess.run([sys.executable, "-c", CHILD, site], cwd=elsewhere, env=child_env, check=True)


if __name__ == "__main__":
    main()
