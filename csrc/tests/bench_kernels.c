/*
 * bench_kernels.c — C microbenchmark of the kernels, every impl this CPU can
 * run, single thread:
 *   matvec <type>     rows x n weights times one activation row (GB/s of weights)
 *   matmul_q <type>   the same rows times 8 tokens (weight reuse)
 *   dequant <type>    GB/s of output floats
 *   quantize <act>    M elements/s
 *   sgemm             GFLOP/s
 * Usage: bench_kernels [--quick] [filter]   (filter: substring of the line name)
 */
#include "testutil.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int quick = 0;
static const char *filter = NULL;
static volatile float sink;

static int want(const char *name) { return !filter || strstr(name, filter); }

/* Repeat fn until min_time has passed; returns seconds per call. */
#define TIME_IT(secs, body) do { \
    double t0_ = now_s(), t_; long it_ = 0; \
    const double min_ = quick ? 0.0 : 0.3; \
    do { body; it_++; t_ = now_s() - t0_; } while (t_ < min_); \
    secs = t_ / (double)it_; } while (0)

static const int btypes[] = {K_Q4_K, K_Q5_K, K_Q6_K, K_Q4_0, K_Q5_0, K_Q8_0, K_F16, K_F32,
                             K_Q2_K, K_Q3_K, K_IQ4_NL, K_IQ4_XS};
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else filter = argv[i];
    }
    const int64_t n = quick ? 512 : 4096, rows = quick ? 16 : 512, ntok = 8;
    char name[64];
    printf("%-22s %-13s %12s %10s\n", "kernel", "impl", "time/call", "rate");
    for (int ti = 0; ti < (int)(sizeof btypes / sizeof btypes[0]); ti++) {
        const int t = btypes[ti], act = k_act_type(t);
        const int64_t rb = k_row_bytes(t, n), ab = k_row_bytes(act, n);
        uint8_t *w = malloc((size_t)(rb * rows)), *a = malloc((size_t)(ab * ntok));
        float *x = malloc((size_t)(n * ntok) * 4), *y = malloc((size_t)(rows * ntok) * 4);
        float *deq = malloc((size_t)(n * rows) * 4);
        fill_weights(t, w, n / block_elems(t) * rows, 0);
        fill_acts(x, n * ntok, 0);
        for (int impl = 0; impl < K_IMPL_MAX; impl++) {
            if (!impl_available(impl)) continue;
            for (int64_t tk = 0; tk < ntok; tk++) k_quantize_act(impl, act, x + tk * n, a + tk * ab, n);
            double s;
            snprintf(name, sizeof name, "matvec %s", type_name(t));
            if (want(name)) {
                TIME_IT(s, k_matvec(impl, t, n, w, (size_t)rb, a, y, 0, rows));
                sink = y[0];
                printf("%-22s %-13s %10.1f us %7.2f GB/s\n", name, impl_names[impl], s * 1e6, (double)(rb * rows) / s * 1e-9);
            }
            snprintf(name, sizeof name, "matmul_q %s x%d", type_name(t), (int)ntok);
            if (want(name)) {
                TIME_IT(s, k_matmul_q(impl, t, n, w, (size_t)rb, 0, rows, a, (size_t)ab, ntok, y, rows));
                sink = y[0];
                printf("%-22s %-13s %10.1f us %7.2f GB/s\n", name, impl_names[impl], s * 1e6, (double)(rb * rows * ntok) / s * 1e-9);
            }
            snprintf(name, sizeof name, "dequant %s", type_name(t));
            if (want(name)) {
                TIME_IT(s, k_dequant(impl, t, w, deq, n * rows));
                sink = deq[1];
                printf("%-22s %-13s %10.1f us %7.2f GB/s out\n", name, impl_names[impl], s * 1e6, (double)(n * rows * 4) / s * 1e-9);
            }
        }
        free(w); free(a); free(x); free(y); free(deq);
    }
    const int acts[] = {K_Q8_K, K_Q8_0, K_F16};
    for (int ai = 0; ai < 3; ai++) {
        const int act = acts[ai];
        const int64_t m = quick ? 4096 : 65536;
        float *x = malloc((size_t)m * 4);
        uint8_t *q = malloc((size_t)k_row_bytes(act, m));
        fill_acts(x, m, 0);
        snprintf(name, sizeof name, "quantize %s", type_name(act));
        if (!want(name)) { free(x); free(q); continue; }
        for (int impl = 0; impl < K_IMPL_MAX; impl++) {
            if (!impl_available(impl)) continue;
            double s;
            TIME_IT(s, k_quantize_act(impl, act, x, q, m));
            sink = (float)q[5];
            printf("%-22s %-13s %10.1f us %7.1f M/s\n", name, impl_names[impl], s * 1e6, (double)m / s * 1e-6);
        }
        free(x); free(q);
    }
    {
        const int64_t M = quick ? 16 : 64, N = quick ? 32 : 256, K = quick ? 64 : 512;
        float *A = malloc((size_t)(M * K) * 4), *B = malloc((size_t)(N * K) * 4), *C = malloc((size_t)(M * N) * 4);
        fill_acts(A, M * K, 0); fill_acts(B, N * K, 0);
        for (int tb = 1; tb >= 0; tb--) {
            snprintf(name, sizeof name, "sgemm %s", tb ? "B^T" : "B");
            if (!want(name)) continue;
            for (int impl = 0; impl < K_IMPL_MAX; impl++) {
                if (!impl_available(impl)) continue;
                double s;
                TIME_IT(s, k_sgemm(impl, tb, 0, M, N, K, A, K, B, tb ? K : N, C, N));
                sink = C[3];
                printf("%-22s %-13s %10.1f us %7.2f GFLOP/s\n", name, impl_names[impl], s * 1e6, 2.0 * (double)(M * N * K) / s * 1e-9);
            }
        }
        free(A); free(B); free(C);
    }
    return 0;
}
