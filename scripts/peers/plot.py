"""Plots the output of `scripts/peers/run.sh` (saved to a file) as two SVG charts beside
docs/peers' SGD-MF plots: word2vec against gensim (words per second and analogy
accuracy, every run) and sparse logistic regression on a9a (milliseconds per epoch and
test accuracy, every run).

    scripts/peers/run.sh 3 2 | tee peers.txt
    target/peers-venv/bin/python scripts/peers/plot.py peers.txt docs/peers
"""

import re
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams["svg.hashsalt"] = "strads"  # the same file for the same figures


def fields(line):
    return dict(re.findall(r"(\w+)=([^\s]+)", line))


def main():
    text = Path(sys.argv[1]).read_text().splitlines()
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    w2v = {"strads": [], "gensim": []}
    lr = {}
    for line in text:
        m = re.match(r"run \d+ (strads|gensim): (.*)", line)
        if m and "words_per_second" in line:
            w2v[m.group(1)].append(fields(m.group(2)))
            continue
        m = re.match(r"run \d+ (strads serial|strads \d+ threads sync=bsp|strads \d+ threads|sklearn): (.*)", line)
        if m:
            f = fields(m.group(2))
            lr.setdefault(m.group(1), []).append(f)
    fig, (a, b) = plt.subplots(1, 2, figsize=(8, 3.2))
    names = ["strads", "gensim"]
    for k, n in enumerate(names):
        ws = [float(f["words_per_second"]) / 1e3 for f in w2v[n]]
        acc = [100 * float(f["analogy"]) for f in w2v[n]]
        a.bar(k, statistics.median(ws), color=f"C{k}")
        a.plot([k] * len(ws), ws, "k.", ms=4)
        b.bar(k, statistics.median(acc), color=f"C{k}")
        b.plot([k] * len(acc), acc, "k.", ms=4)
    for ax, title in [(a, "thousand words / s (2 threads)"), (b, "analogy accuracy, %")]:
        ax.set_xticks(range(len(names)), names)
        ax.set_title(title, fontsize=10)
    fig.suptitle("word2vec on text8-prefix, 5 epochs: strads vs gensim 4.4.0", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "word2vec-text8.svg", metadata={"Date": None})
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
    names = list(lr)
    labels = [n.replace("strads ", "").replace(" threads", "t").replace("sklearn", "scikit-learn") for n in names]
    for k, n in enumerate(names):
        ms = [1000 * float(f["seconds"]) / float(f["epochs"]) for f in lr[n]]
        acc = [100 * float(f["acc_test"]) for f in lr[n]]
        a.bar(k, statistics.median(ms), color=f"C{k}")
        a.plot([k] * len(ms), ms, "k.", ms=4)
        b.bar(k, statistics.median(acc), color=f"C{k}")
        b.plot([k] * len(acc), acc, "k.", ms=4)
    b.set_ylim(84, 86)
    for ax, title in [(a, "ms per epoch"), (b, "test accuracy, %")]:
        ax.set_xticks(range(len(names)), labels, fontsize=8)
        ax.set_title(title, fontsize=10)
    fig.suptitle("logistic regression on a9a, 10 epochs", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "sparse-lr-a9a.svg", metadata={"Date": None})


if __name__ == "__main__":
    main()
