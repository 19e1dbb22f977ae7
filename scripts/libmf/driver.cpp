// A small driver around LIBMF's C API (mf.h), for benches/peers.rs.
//
// Reads a training and a test set in the binary format the bench writes, trains with
// mf_train_with_validation (real-valued matrix factorization, squared loss, L2
// regularisation), and prints one parseable line per epoch:
//
//   libmf config m=<m> n=<n> train=<nnz> test=<nnz> k=<k> threads=<t> bins=<b> ...
//   libmf ready setup_seconds=<s> reg_seconds=<s>
//   libmf epoch=<e> seconds=<s> raw_seconds=<s> tr_rmse=<f> va_rmse=<f>
//   ...
//   libmf final test_rmse=<f> epochs=<e> seconds=<s> raw_seconds=<s>
//
// LIBMF runs all epochs inside one call and offers no per-epoch callback. What it does
// offer, when `quiet` is false, is one line on std::cout after every epoch, written by
// its main thread while the worker threads wait for the next epoch (Scheduler::
// wait_for_jobs_done ... resume). The driver installs an unbuffered streambuf on
// std::cout and timestamps those lines:
//
//   - an epoch starts when the previous line's newline has been handled (or, for the
//     first epoch, the header's) and ends at the first character of its own line;
//   - in between LIBMF also sums its regularisation term (calc_reg1 + calc_reg2 over P
//     and Q) before it prints; the driver measures the same code on arrays of the same
//     size before training and subtracts the median (`seconds`); `raw_seconds` keeps the
//     unadjusted figure;
//   - the validation RMSE LIBMF computes for the line comes after the first character,
//     so it is never counted.
//
// With --step the driver blocks at every newline until a line arrives on stdin, so the
// bench can interleave LIBMF epoch by epoch with its other systems. LIBMF's worker
// threads sleep on a condition variable meanwhile (Scheduler::put_job), and the time
// spent paused is not counted.
//
// LIBMF prints its RMSE with 4 decimals (setprecision(4)); the driver imbues std::cout
// with a num_put facet that writes doubles with 9 significant digits instead, so the
// per-epoch test RMSE is as precise as the bench's own.
//
// After the last epoch's line the driver prints the final line and ends the process
// (std::_Exit) instead of letting mf_train_with_validation return: after the last epoch
// LIBMF resumes its workers for one more round and only then tells them to stop
// (fpsg_core: sched.resume(); sched.terminate()), which (a) changes the model by a few
// extra blocks of updates, and (b) deadlocks when the workers finish that whole extra
// round before the main thread reaches terminate() -- seen here on ml-100k with 2 workers
// on 2 cores, where the main thread is the third thread. The final test RMSE is therefore
// LIBMF's own validation RMSE after exactly `epochs` epochs (Utility::calc_error, the same
// sum as calc_rmse).
//
// Input format (little endian): magic "STRADSMF", i32 m, i32 n, i64 nnz, then nnz
// records {i32 u, i32 v, f32 r} with 0-based ids: exactly LIBMF's mf_node.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <locale>
#include <sstream>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <vector>

#if defined USEAVX
#include <immintrin.h>
#elif defined USESSE
#include <pmmintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#include "mf.h"

using namespace mf;
using Clock = std::chrono::steady_clock;

static_assert(sizeof(mf_node) == 12, "mf_node must be {int, int, float}");

namespace {

double seconds_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

struct Args {
    std::string train, test;
    int k = 32, epochs = 20, threads = 1, bins = 0;
    float lr = 0.01f, lambda = 0.05f;
    bool step = false;
};

[[noreturn]] void usage(const char *why) {
    std::fprintf(stderr,
                 "libmf_driver: %s\n"
                 "usage: libmf_driver --train FILE --test FILE [--k 32] [--epochs 20]\n"
                 "       [--lr 0.01] [--lambda 0.05] [--threads 1] [--bins N] [--step]\n",
                 why);
    std::exit(2);
}

Args parse_args(int argc, char **argv) {
    Args a;
    for (int i = 1; i < argc; i++) {
        std::string f = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(("missing value after " + f).c_str());
            return argv[++i];
        };
        if (f == "--train") a.train = value();
        else if (f == "--test") a.test = value();
        else if (f == "--k") a.k = std::stoi(value());
        else if (f == "--epochs") a.epochs = std::stoi(value());
        else if (f == "--threads") a.threads = std::stoi(value());
        else if (f == "--bins") a.bins = std::stoi(value());
        else if (f == "--lr") a.lr = std::stof(value());
        else if (f == "--lambda") a.lambda = std::stof(value());
        else if (f == "--step") a.step = true;
        else usage(("unknown argument " + f).c_str());
    }
    if (a.train.empty() || a.test.empty()) usage("--train and --test are required");
    if (a.k < 1 || a.epochs < 1 || a.threads < 1) usage("k, epochs and threads must be >= 1");
    return a;
}

struct Ratings {
    int m = 0, n = 0;
    std::vector<mf_node> nodes;
    mf_problem problem() {
        mf_problem p;
        p.m = m;
        p.n = n;
        p.nnz = (mf_long)nodes.size();
        p.R = nodes.data();
        return p;
    }
};

Ratings read_ratings(const std::string &path) {
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) throw std::runtime_error("cannot open " + path);
    char magic[8];
    int32_t m, n;
    int64_t nnz;
    bool ok = std::fread(magic, 1, 8, f) == 8 && std::memcmp(magic, "STRADSMF", 8) == 0 &&
              std::fread(&m, 4, 1, f) == 1 && std::fread(&n, 4, 1, f) == 1 &&
              std::fread(&nnz, 8, 1, f) == 1 && m > 0 && n > 0 && nnz >= 0;
    if (!ok) {
        std::fclose(f);
        throw std::runtime_error(path + ": not a STRADSMF ratings file");
    }
    Ratings r;
    r.m = m;
    r.n = n;
    r.nodes.resize((size_t)nnz);
    size_t got = std::fread(r.nodes.data(), sizeof(mf_node), (size_t)nnz, f);
    std::fclose(f);
    if (got != (size_t)nnz) throw std::runtime_error(path + ": truncated");
    for (const mf_node &x : r.nodes)
        if (x.u < 0 || x.u >= m || x.v < 0 || x.v >= n)
            throw std::runtime_error(path + ": id out of range");
    return r;
}

// The regularisation sums LIBMF computes before printing each epoch's line
// (Utility::calc_reg1 and calc_reg2 in mf.cpp, which are private to that file),
// reproduced with the same loops, the same OpenMP clause and the same inner product, on
// arrays of the model's size, to estimate how much of each timed interval they take.
float inner_product(const float *p, const float *q, int k) {
#if defined USEAVX
    __m256 x = _mm256_setzero_ps();
    for (int d = 0; d < k; d += 8)
        x = _mm256_add_ps(x, _mm256_mul_ps(_mm256_load_ps(p + d), _mm256_load_ps(q + d)));
    x = _mm256_add_ps(x, _mm256_permute2f128_ps(x, x, 1));
    x = _mm256_hadd_ps(x, x);
    x = _mm256_hadd_ps(x, x);
    float out;
    _mm_store_ss(&out, _mm256_castps256_ps128(x));
    return out;
#elif defined USESSE
    __m128 x = _mm_setzero_ps();
    for (int d = 0; d < k; d += 4)
        x = _mm_add_ps(x, _mm_mul_ps(_mm_load_ps(p + d), _mm_load_ps(q + d)));
    x = _mm_hadd_ps(x, x);
    x = _mm_hadd_ps(x, x);
    float out;
    _mm_store_ss(&out, x);
    return out;
#else
    float s = 0;
    for (int d = 0; d < k; d++) s += p[d] * q[d];
    return s;
#endif
}

double reg1_core(const float *ptr, int size, int k, const std::vector<int> &omega) {
    double reg = 0;
    for (int i = 0; i < size; i++) {
        if (omega[i] <= 0) continue;
        float tmp = 0;
        for (int j = 0; j < k; j++) tmp += std::abs(ptr[(long long)i * k + j]);
        reg += omega[i] * tmp;
    }
    return reg;
}

double reg2_core(const float *ptr, int size, int k, const std::vector<int> &omega, int threads) {
    double reg = 0;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : reg)
#endif
    for (int i = 0; i < size; i++) {
        if (omega[i] <= 0) continue;
        reg += omega[i] * inner_product(ptr + (long long)i * k, ptr + (long long)i * k, k);
    }
    (void)threads;
    return reg;
}

double estimate_reg_seconds(const Ratings &train, int k, int threads) {
    int ka = (k + 7) / 8 * 8;  // LIBMF pads k to 32 bytes (kALIGN floats)
    std::vector<int> op(train.m, 0), oq(train.n, 0);
    for (const mf_node &x : train.nodes) {
        op[x.u]++;
        oq[x.v]++;
    }
    void *pp = nullptr, *qq = nullptr;
    if (posix_memalign(&pp, 32, sizeof(float) * (size_t)train.m * ka) != 0 ||
        posix_memalign(&qq, 32, sizeof(float) * (size_t)train.n * ka) != 0)
        throw std::bad_alloc();
    float *P = (float *)pp, *Q = (float *)qq;
    for (size_t i = 0; i < (size_t)train.m * ka; i++) P[i] = (float)(i % 97) / 97.0f;
    for (size_t i = 0; i < (size_t)train.n * ka; i++) Q[i] = (float)(i % 89) / 89.0f;
    std::vector<double> times;
    volatile double sink = 0;
    for (int rep = 0; rep < 7; rep++) {
        auto t = Clock::now();
        double r1 = reg1_core(P, train.m, ka, op) + reg1_core(Q, train.n, ka, oq);
        double r2 = reg2_core(P, train.m, ka, op, threads) + reg2_core(Q, train.n, ka, oq, threads);
        sink = sink + r1 + r2;
        times.push_back(seconds_between(t, Clock::now()));
    }
    std::free(P);
    std::free(Q);
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// Writes doubles with 9 significant digits whatever precision the stream asks for,
// honouring the field width (LIBMF separates its columns with width(13)).
class Precise : public std::num_put<char> {
  protected:
    iter_type do_put(iter_type out, std::ios_base &str, char_type fill, double v) const override {
        char buf[64];
        int n = std::snprintf(buf, sizeof buf, " %.9g", v);
        std::streamsize pad = str.width() - n;
        str.width(0);
        for (; pad > 0; pad--) *out++ = fill;
        return std::copy(buf, buf + n, out);
    }
};

// std::cout's new buffer: unbuffered, so every character LIBMF prints arrives here at
// once and the first one of each line can be timestamped.
class EpochClock : public std::streambuf {
  public:
    EpochClock(bool step, double reg_seconds, int last)
        : step_(step), reg_seconds_(reg_seconds), last_(last) {}

    Clock::time_point start;  // when mf_train_with_validation was called
    int epochs = 0;
    double total = 0, total_raw = 0;

  protected:
    int overflow(int c) override {
        if (c == EOF) return 0;
        if (line_.empty()) first_ = Clock::now();
        if (c == '\n') {
            handle(line_);
            line_.clear();
        } else {
            line_.push_back((char)c);
        }
        return c;
    }
    int sync() override { return 0; }

  private:
    void handle(const std::string &line) {
        std::istringstream in(line);
        std::string first;
        in >> first;
        if (first == "iter") {
            // The header: LIBMF has shuffled, gridded, sorted and initialised; the worker
            // threads start right after this line.
            std::printf("libmf ready setup_seconds=%.6f reg_seconds=%.6f\n",
                        seconds_between(start, first_), reg_seconds_);
            pause();
            return;
        }
        int iter = -1;
        double tr = NAN, va = NAN;
        std::istringstream row(line);
        if (!(row >> iter >> tr)) {
            std::fprintf(stderr, "libmf says: %s\n", line.c_str());
            return;
        }
        row >> va;  // absent without a validation set
        double raw = seconds_between(resumed_, first_);
        double adj = std::max(raw - reg_seconds_, 0.0);
        epochs++;
        total += adj;
        total_raw += raw;
        std::printf("libmf epoch=%d seconds=%.6f raw_seconds=%.6f tr_rmse=%.9g va_rmse=%.9g\n",
                    iter + 1, adj, raw, tr, va);
        if (epochs == last_) {
            std::printf("libmf final test_rmse=%.9g epochs=%d seconds=%.6f raw_seconds=%.6f\n",
                        va, epochs, total, total_raw);
            std::fflush(stdout);
            std::_Exit(0);
        }
        pause();
    }

    void pause() {
        std::fflush(stdout);
        if (step_) {
            std::string go;
            if (!std::getline(std::cin, go)) {
                std::fprintf(stderr, "libmf_driver: stdin closed, stopping\n");
                std::_Exit(3);
            }
        }
        resumed_ = Clock::now();
    }

    bool step_;
    double reg_seconds_;
    int last_;
    std::string line_;
    Clock::time_point first_, resumed_;
};

}  // namespace

int main(int argc, char **argv) {
    Args a = parse_args(argc, argv);
    try {
        Ratings train = read_ratings(a.train);
        Ratings test = read_ratings(a.test);
        int m = std::max(train.m, test.m), n = std::max(train.n, test.n);
        train.m = test.m = m;
        train.n = test.n = n;
#ifdef _OPENMP
        omp_set_num_threads(a.threads);  // for OpenMP loops without a num_threads clause
#endif

        mf_parameter param = mf_get_default_param();
        param.fun = P_L2_MFR;  // real-valued MF, squared loss
        param.k = a.k;
        param.nr_threads = a.threads;
        param.nr_iters = a.epochs;
        param.lambda_p1 = 0;
        param.lambda_q1 = 0;
        param.lambda_p2 = a.lambda;
        param.lambda_q2 = a.lambda;
        param.eta = a.lr;
        param.do_nmf = false;
        param.quiet = false;  // needed: the per-epoch lines are what the driver times
        param.copy_data = true;
        if (a.bins > 0) param.nr_bins = a.bins;
        // LIBMF refuses bins < threads and warns at bins <= 2 * threads.
        param.nr_bins = std::max(param.nr_bins, 2 * a.threads + 1);

        double reg_seconds = estimate_reg_seconds(train, a.k, a.threads);
        std::printf(
            "libmf config m=%d n=%d train=%lld test=%lld k=%d threads=%d bins=%d epochs=%d "
            "eta=%g lambda_p2=%g lambda_q2=%g lambda_p1=0 lambda_q1=0 fun=P_L2_MFR simd=%s\n",
            m, n, (long long)train.nodes.size(), (long long)test.nodes.size(), a.k, a.threads,
            param.nr_bins, a.epochs, (double)param.eta, (double)param.lambda_p2,
            (double)param.lambda_q2,
#if defined USEAVX
            "avx"
#elif defined USESSE
            "sse"
#else
            "none"
#endif
        );
        std::fflush(stdout);

        EpochClock clock(a.step, reg_seconds, a.epochs);
        std::cout.rdbuf(&clock);
        std::cout.imbue(std::locale(std::cout.getloc(), new Precise));
        mf_problem tr = train.problem(), va = test.problem();
        clock.start = Clock::now();
        mf_model *model = mf_train_with_validation(&tr, &va, param);
        // Only reached when LIBMF refused the parameters (it says why on stderr) or
        // printed fewer epoch lines than asked for.
        if (model != nullptr) mf_destroy_model(&model);
        std::fprintf(stderr, "libmf_driver: LIBMF returned after %d of %d epochs\n",
                     clock.epochs, a.epochs);
        return 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "libmf_driver: %s\n", e.what());
        return 1;
    }
    return 0;
}
