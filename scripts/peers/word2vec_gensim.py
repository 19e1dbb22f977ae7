"""gensim's Word2Vec (skip-gram, negative sampling) on the same corpus and settings as
strads' `word2vec` example: prints the training time, words per second and analogy
accuracy in the same `key=value` summary form.

    python word2vec_gensim.py --data text8_prefix_6877825.txt.gz --questions questions-words.txt \
        --epochs 5 --threads 2

The corpus is read into memory first (as the example does), one sentence per line cut
into sentences of at most 10 000 words (gensim's LineSentence), so the timing is
training only. Settings default to gensim's and the example's: dim 100, window 5,
negative 5, min_count 5, sample 1e-3, alpha 0.025 falling to 1e-4.
"""

import argparse
import gzip
import logging
import sys
import time

from gensim.models import Word2Vec


def sentences(path, max_len=10_000):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            words = line.split()
            for k in range(0, len(words), max_len):
                out.append(words[k:k + max_len])
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--questions")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--window", type=int, default=5)
    p.add_argument("--negative", type=int, default=5)
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--sample", type=float, default=1e-3)
    p.add_argument("--alpha", type=float, default=0.025)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--verbose", action="store_true")
    a = p.parse_args()
    if a.verbose:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    corpus = sentences(a.data)
    raw = sum(len(s) for s in corpus)
    model = Word2Vec(vector_size=a.dim, window=a.window, negative=a.negative, hs=0, sg=1,
                     min_count=a.min_count, sample=a.sample, alpha=a.alpha, min_alpha=1e-4,
                     workers=a.threads, seed=a.seed)
    model.build_vocab(corpus)
    t = time.perf_counter()
    model.train(corpus, total_examples=model.corpus_count, epochs=a.epochs)
    seconds = time.perf_counter() - t
    accuracy, asked = 0.0, 0
    if a.questions:
        accuracy, sections = model.wv.evaluate_word_analogies(a.questions)
        total = [s for s in sections if s["section"] == "Total accuracy"][0]
        asked = len(total["correct"]) + len(total["incorrect"])
    print(f"peer=gensim-{__import__('gensim').__version__} analogy={accuracy:.6f} questions={asked} "
          f"words_per_second={raw * a.epochs / seconds:.0f} vocab={len(model.wv)} "
          f"epochs={a.epochs} seconds={seconds:.4f} threads={a.threads}")


if __name__ == "__main__":
    main()
