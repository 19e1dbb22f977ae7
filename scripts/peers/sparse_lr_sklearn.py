"""scikit-learn's SGDClassifier(loss="log_loss") on LIBSVM data (a9a), beside strads'
`sparse_lr` example: prints the training time per epoch and the test accuracy in the
same `key=value` form.

    python sparse_lr_sklearn.py --data a9a --test a9a.t --epochs 10

The model is the example's: logistic loss, an L2 penalty of `--reg`, the samples in the
file's order (shuffle=False), `--epochs` passes (max_iter, tol=None), the learning rate
`lr / (1 + epoch * decay)` approximated by scikit-learn's "invscaling" schedule on the
sample count is not the same, so the script uses scikit-learn's own default schedule
("optimal") and reports it: the comparison is of a tuned peer, not of identical
arithmetic. scikit-learn's SGD is single-threaded (n_jobs only parallelises one-vs-rest).
"""

import argparse
import time

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import SGDClassifier


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--test", required=True)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--reg", type=float, default=1e-4)
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args()
    x, y = load_svmlight_file(a.data)
    xt, yt = load_svmlight_file(a.test, n_features=x.shape[1])
    x, xt = x.astype(np.float32), xt.astype(np.float32)
    times = []
    for _ in range(a.runs):
        model = SGDClassifier(loss="log_loss", penalty="l2", alpha=a.reg, max_iter=a.epochs,
                              tol=None, shuffle=False, random_state=1, fit_intercept=False)
        t = time.perf_counter()
        model.fit(x, y)
        times.append(time.perf_counter() - t)
    seconds = sorted(times)[len(times) // 2]
    acc_train = (model.predict(x) == y).mean()
    acc_test = (model.predict(xt) == yt).mean()
    print(f"peer=sklearn-{__import__('sklearn').__version__}-SGDClassifier acc_train={acc_train:.6f} "
          f"acc_test={acc_test:.6f} epochs={a.epochs} seconds={seconds:.4f} "
          f"epoch_seconds={seconds / a.epochs:.6f} threads=1")


if __name__ == "__main__":
    main()
