#!/usr/bin/env bash
# Peers side by side in one run (issue 13): strads' word2vec against gensim's Word2Vec on
# text8's prefix, and strads' sparse_lr against its own serial loop and scikit-learn's
# SGDClassifier on a9a. Runs alternate (strads, peer, strads, peer, ...) so that the ratios
# share the machine's noise. Prints one line per run; record the medians in BENCHMARKS.md.
#
#   scripts/peers/run.sh [runs] [threads] | tee peers.txt
#   target/peers-venv/bin/python scripts/peers/plot.py peers.txt docs/peers   # the SVG plots
#
# Needs ../shared/data (text8-prefix, libsvm-a9a) and Python 3 with pip: gensim and
# scikit-learn are installed into target/peers-venv (PyPI); nothing is committed.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
threads=${2:-2}
data=../shared/data
venv=target/peers-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q "gensim==4.4.0" "scikit-learn==1.9.1" "matplotlib==3.10.*"
questions=$("$venv/bin/python" -c 'import gensim, os; print(os.path.join(os.path.dirname(gensim.__file__), "test", "test_data", "questions-words.txt"))')
cargo build -q --release --example word2vec --example sparse_lr
text8=$data/text8-prefix/text8_prefix_6877825.txt.gz
a9a=$data/libsvm-a9a
last() { tail -n 1; }
echo "# word2vec on text8-prefix, $threads threads, 5 epochs (dim 100, window 5, negative 5, min_count 5, sample 1e-3)"
for r in $(seq "$runs"); do
    echo "run $r strads: $(STRADS_THREADS=$threads target/release/examples/word2vec --data "$text8" --questions "$questions" | last)"
    echo "run $r gensim: $("$venv/bin/python" scripts/peers/word2vec_gensim.py --data "$text8" --questions "$questions" --threads "$threads" | last)"
done
echo "# word2vec serial loop (STRADS_SERIAL=1)"
echo "serial: $(STRADS_SERIAL=1 target/release/examples/word2vec --data "$text8" --questions "$questions" | last)"
echo "# sparse LR on a9a, 10 epochs"
for r in $(seq "$runs"); do
    echo "run $r strads serial: $(STRADS_SERIAL=1 target/release/examples/sparse_lr --data "$a9a/a9a" --test "$a9a/a9a.t" | last)"
    echo "run $r strads $threads threads: $(STRADS_THREADS=$threads target/release/examples/sparse_lr --data "$a9a/a9a" --test "$a9a/a9a.t" | last)"
    echo "run $r strads $threads threads sync=bsp: $(STRADS_THREADS=$threads target/release/examples/sparse_lr --data "$a9a/a9a" --test "$a9a/a9a.t" --sync bsp | last)"
    echo "run $r sklearn: $("$venv/bin/python" scripts/peers/sparse_lr_sklearn.py --data "$a9a/a9a" --test "$a9a/a9a.t" --runs 1 | last)"
done
