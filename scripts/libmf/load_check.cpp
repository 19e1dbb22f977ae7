// Reads a model with LIBMF's own mf_load_model and prints its RMSE on a test file, for
// `sgd_mf --save` (issue 27): the model strads wrote must give LIBMF the RMSE sgd_mf
// printed.
//
//   load_check MODEL TEST [--one-based]
//
// TEST: one rating a line, "user item rating" separated by spaces or tabs (MovieLens'
// u.data layout; further columns ignored); --one-based subtracts 1 from both ids (what
// strads' loader does for MovieLens files). Prints
//
//   libmf load_check m=<m> n=<n> k=<k> test=<nnz> rmse=<9 significant digits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "mf.h"

using namespace mf;

int main(int argc, char **argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: load_check MODEL TEST [--one-based]\n");
        return 2;
    }
    bool one_based = argc > 3 && std::strcmp(argv[3], "--one-based") == 0;
    mf_model *model = mf_load_model(argv[1]);
    if (model == nullptr) {
        std::fprintf(stderr, "load_check: mf_load_model cannot read %s\n", argv[1]);
        return 1;
    }
    std::ifstream test(argv[2]);
    if (!test) {
        std::fprintf(stderr, "load_check: cannot read %s\n", argv[2]);
        return 1;
    }
    std::string line;
    double sum = 0.0;
    long n = 0;
    while (std::getline(test, line)) {
        std::istringstream in(line);
        long u, v;
        double r;
        if (!(in >> u >> v >> r)) continue;
        if (one_based) {
            u -= 1;
            v -= 1;
        }
        double e = r - mf_predict(model, (mf_int)u, (mf_int)v);
        sum += e * e;
        n += 1;
    }
    std::printf("libmf load_check m=%d n=%d k=%d test=%ld rmse=%.9g\n", model->m, model->n,
                model->k, n, std::sqrt(sum / (n > 0 ? n : 1)));
    mf_destroy_model(&model);
    return 0;
}
