"""The labelled datasets behind the classification bandit, loaded without any download.

``iris`` is embedded (:mod:`dpbandits.envs._iris`). ``digits``, ``wine`` and
``breast_cancer`` are the copies scikit-learn installs with itself (its ``load_*`` functions
read files inside the package; nothing is fetched), so they need the optional extra
``datasets`` (``pip install 'dpbandits[datasets]'``); scikit-learn is imported here, lazily,
only when one of them is asked for.

=================  ======  ====  ===  ==========================================  ===========
name               rows    d     K    features                                    standardize
=================  ======  ====  ===  ==========================================  ===========
``iris``           150     4     3    sepal/petal lengths and widths (mm)          yes
``digits``         1,797   64    10   8 x 8 images, ink counts 0..16 per pixel     no
``wine``           178     13    3    chemical analyses (13 different units)       yes
``breast_cancer``  569     30    2    cell-nucleus measurements (30 units)         yes
=================  ======  ====  ===  ==========================================  ===========

``standardize`` is the default of :class:`ClassificationBanditEnv` for the dataset: features
in different units are centred and scaled to unit variance so that no unit dominates a row's
norm; the digits' pixels share one unit and one range, and standardizing them would turn
rarely inked border pixels into values up to 42 standard deviations that then set every such
row's l_inf norm (and shrink the rest of that image to a few percent of the bound).
"""

from __future__ import annotations

import functools

import numpy as np

from dpbandits._validation import check_choice
from dpbandits.envs._iris import load_iris
from dpbandits.errors import missing_dataset_extra

__all__ = ["DATASETS", "SHAPES", "STANDARDIZE", "load_dataset"]

DATASETS = ("iris", "digits", "wine", "breast_cancer")
#: dataset -> whether its features are standardized by default (see the module docstring)
STANDARDIZE = {"iris": True, "digits": False, "wine": True, "breast_cancer": True}
#: dataset -> (rows, d, K), the table above: what ``dpbandits list`` prints without loading
#: scikit-learn (tests/test_real_datasets.py checks them against the loaded data)
SHAPES = {"iris": (150, 4, 3), "digits": (1797, 64, 10), "wine": (178, 13, 3),
          "breast_cancer": (569, 30, 2)}
_SKLEARN_LOADERS = {"digits": "load_digits", "wine": "load_wine",
                    "breast_cancer": "load_breast_cancer"}


def load_dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of a built-in dataset: float64 features ``(n, d)`` and int64 labels ``(n,)``
    (read-only arrays, cached per process). Raises ``ImportError`` naming the ``datasets``
    extra when the dataset comes from scikit-learn and it is not installed."""
    return _load(check_choice("dataset", name, DATASETS))


@functools.cache
def _load(name: str) -> tuple[np.ndarray, np.ndarray]:
    if name == "iris":
        X, y = load_iris()
    else:
        try:
            import sklearn.datasets
        except ImportError as exc:
            raise missing_dataset_extra(name) from exc
        X, y = getattr(sklearn.datasets, _SKLEARN_LOADERS[name])(return_X_y=True)
    X = np.array(X, dtype=np.float64)
    y = np.array(y, dtype=np.int64)
    X.flags.writeable = False
    y.flags.writeable = False
    return X, y
