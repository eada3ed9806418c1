/*
 * harness.c — the program scripts/apple-proxy.sh runs under qemu-aarch64 with
 * the counting plugin (icount.c). It runs one weight-matrix product REPS
 * times over ROWS rows of N weights and NTOK tokens of activations:
 *
 *   harness woolly  TYPE NTOK REPS IMPL   Woolly's kernels, through the path the
 *                                         engine takes (woolly_product below)
 *   harness vec_dot TYPE NTOK REPS        llama.cpp's ggml_vec_dot_<type>_<act>
 *   harness repack  TYPE NTOK REPS        llama.cpp's repacked ggml_gemv_* (NTOK 1)
 *                                         or ggml_gemm_* (NTOK a multiple of 4)
 *   harness info    TYPE IMPL             which Woolly path TYPE takes under IMPL
 *   harness check   TYPE NTOK IMPL        Woolly's product and llama.cpp's vec_dot on
 *                                         the same data must agree (to 1e-4 of the
 *                                         largest output: the sums' orders differ),
 *                                         so the two sides read the same layout
 *
 * TYPE: q4_k q5_k q6_k q8_0 iq4_xs mxfp4. The script takes the difference of the
 * instruction counts of REPS = R and REPS = 0, so setup (filling buffers,
 * packing weights, the C runtime) cancels. A product whose kernel does not
 * exist prints "none" and exits with status 3.
 *
 * The llama.cpp objects are built either for an M1 (-mcpu=apple-m1: dotprod)
 * or for an M2 (-mcpu=apple-m2: dotprod and i8mm); __ARM_FEATURE_MATMUL_INT8
 * tells this file which, and picks the kernels llama.cpp's CPU backend
 * chooses for that CPU (ggml_repack_get_optimal_repack_type and the vec_dot
 * row count of its type traits at the reference commit).
 *
 * Weights and activations are pseudo-random bytes with bit 6 of every byte
 * cleared, so that every f16 and f32 scale is finite; the kernels have no
 * data-dependent branches that this would hide. The last product's outputs
 * are summed into a printed checksum, outside the repeated loop.
 */
#include "kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_WEIGHTS 2048 /* per row: TinyLlama's hidden size, 8 super-blocks */
#define ROWS 64         /* a multiple of every interleave (8 rows) and of Woolly's tiles */
#define MAX_TOK 64

/* ---- llama.cpp's kernels (C linkage at the reference commit) ------------- */
typedef void ggml_vec_dot_fn(int n, float *s, size_t bs, const void *x, size_t bx, const void *y, size_t by,
                             int nrc);
typedef void ggml_gemx_fn(int n, float *s, size_t bs, const void *x, const void *y, int nr, int nc);

ggml_vec_dot_fn ggml_vec_dot_q4_K_q8_K, ggml_vec_dot_q5_K_q8_K, ggml_vec_dot_q6_K_q8_K, ggml_vec_dot_q8_0_q8_0,
    ggml_vec_dot_iq4_xs_q8_K, ggml_vec_dot_mxfp4_q8_0;
ggml_gemx_fn ggml_gemv_q4_K_8x4_q8_K, ggml_gemm_q4_K_8x4_q8_K, ggml_gemv_q5_K_8x4_q8_K, ggml_gemm_q5_K_8x4_q8_K,
    ggml_gemv_q6_K_8x4_q8_K, ggml_gemm_q6_K_8x4_q8_K, ggml_gemv_q8_0_4x4_q8_0, ggml_gemm_q8_0_4x4_q8_0,
    ggml_gemv_q4_K_8x8_q8_K, ggml_gemm_q4_K_8x8_q8_K, ggml_gemv_q5_K_8x8_q8_K, ggml_gemm_q5_K_8x8_q8_K,
    ggml_gemv_q6_K_8x8_q8_K, ggml_gemm_q6_K_8x8_q8_K, ggml_gemv_q8_0_4x8_q8_0, ggml_gemm_q8_0_4x8_q8_0,
    ggml_gemv_mxfp4_4x4_q8_0, ggml_gemm_mxfp4_4x4_q8_0;

typedef struct {
    const char *name;
    int type;                /* Woolly's (= ggml's) type id */
    ggml_vec_dot_fn *vec_dot;
    int vec_dot_rows;        /* nrc: rows x tokens per vec_dot call in a batch */
    ggml_gemx_fn *gemv, *gemm;  /* NULL: llama.cpp has no repacked kernel here */
    int interleave;          /* rows per repacked group */
} type_case;

/* The layouts of the machine the harness is built for: M2 and later
 * (i8mm) the 8x8 (K-quants) and 4x8 (Q8_0) layouts, vec_dot taking 2x2
 * for Q4_K, Q6_K and Q8_0; M1 the 8x4 (K-quants) and 4x4 (Q8_0) dotprod
 * layouts, vec_dot one row x one token. MXFP4's only arm64 layout is the
 * dotprod 4x4. */
#if defined(__ARM_FEATURE_MATMUL_INT8)
#define KQ_GEMX(t) ggml_gemv_##t##_8x8_q8_K, ggml_gemm_##t##_8x8_q8_K
#define Q8_GEMX ggml_gemv_q8_0_4x8_q8_0, ggml_gemm_q8_0_4x8_q8_0
#define NRC2 2
#else
#define KQ_GEMX(t) ggml_gemv_##t##_8x4_q8_K, ggml_gemm_##t##_8x4_q8_K
#define Q8_GEMX ggml_gemv_q8_0_4x4_q8_0, ggml_gemm_q8_0_4x4_q8_0
#define NRC2 1
#endif
static const type_case cases[] = {
    {"q4_k", K_Q4_K, ggml_vec_dot_q4_K_q8_K, NRC2, KQ_GEMX(q4_K), 8},
    {"q5_k", K_Q5_K, ggml_vec_dot_q5_K_q8_K, 1, KQ_GEMX(q5_K), 8},
    {"q6_k", K_Q6_K, ggml_vec_dot_q6_K_q8_K, NRC2, KQ_GEMX(q6_K), 8},
    {"q8_0", K_Q8_0, ggml_vec_dot_q8_0_q8_0, NRC2, Q8_GEMX, 4},
    {"iq4_xs", K_IQ4_XS, ggml_vec_dot_iq4_xs_q8_K, 1, NULL, NULL, 0},
    {"mxfp4", K_MXFP4, ggml_vec_dot_mxfp4_q8_0, 1, ggml_gemv_mxfp4_4x4_q8_0, ggml_gemm_mxfp4_4x4_q8_0, 4},
};

static const type_case *find_case(const char *name) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(cases[i].name, name)) return &cases[i];
    return NULL;
}

/* ---- Woolly ----------------------------------------------------------------
 * The type's kernel set is the most specific layer of impl's tables that has
 * the type's dot (a packed layout is taken from that same layer, kernels.h). */
static const k_type_kernels *woolly_set(int impl, int type) {
    for (int layer = 0;; layer++) {
        const k_type_kernels *t = k_arch_get_table(impl, layer);
        if (!t) return NULL;
        if (t[type].dot) return &t[type];
    }
}

static int woolly_packed(const k_type_kernels *set) {
    return set && set->pack_rows > 0 && set->pack && set->mm_packed && ROWS % set->pack_rows == 0;
}

/* The one place that runs Woolly's product: the packed tile over the rows
 * packed at setup when the type's set has a packed layout, otherwise the
 * drivers the engine calls (k_matvec for one token, k_matmul_q for a batch). */
static int woolly_product(int impl, const type_case *c, const void *w, const void *packed, size_t row_bytes,
                          const void *a, size_t a_row_bytes, int ntok, float *y) {
    const k_type_kernels *set = woolly_set(impl, c->type);
    if (woolly_packed(set)) {
        set->mm_packed(N_WEIGHTS, packed, row_bytes, ROWS, a, ntok == 1 ? 0 : a_row_bytes, ntok, y,
                       ntok == 1 ? 0 : ROWS);
        return 0;
    }
    if (ntok == 1) return k_matvec(impl, c->type, N_WEIGHTS, w, row_bytes, a, y, 0, ROWS);
    return k_matmul_q(impl, c->type, N_WEIGHTS, w, row_bytes, 0, ROWS, a, a_row_bytes, ntok, y, ROWS);
}

/* ---- llama.cpp -------------------------------------------------------------
 * vec_dot over every (row, token) as its mul_mat calls it: nrc rows x nrc
 * tokens per call when the batch allows (one token: nrc = 1). */
static void llama_vec_dot(const type_case *c, const void *w, size_t row_bytes, const void *a, size_t a_row_bytes,
                          int ntok, float *y) {
    const int nrc = ntok % c->vec_dot_rows == 0 ? c->vec_dot_rows : 1;
    const char *wb = (const char *)w, *ab = (const char *)a;
    for (int t = 0; t < ntok; t += nrc)
        for (int r = 0; r < ROWS; r += nrc)
            c->vec_dot(N_WEIGHTS, y + (size_t)t * ROWS + r, ROWS, wb + (size_t)r * row_bytes, row_bytes,
                       ab + (size_t)t * a_row_bytes, a_row_bytes, nrc);
}

/* The repacked kernels read weights in groups of `interleave` rows and, for
 * gemm, activations in groups of 4 tokens; both layouts take exactly the
 * bytes of the plain rows, so the same buffers serve (their contents are
 * random either way). */
static void llama_repack(const type_case *c, const void *w, const void *a, int ntok, float *y) {
    if (ntok == 1) c->gemv(N_WEIGHTS, y, ROWS, w, a, 1, ROWS);
    else c->gemm(N_WEIGHTS, y, ROWS, w, a, ntok, ROWS);
}

static void fill(unsigned char *p, size_t n, uint32_t seed) {
    uint32_t x = seed;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (unsigned char)(x >> 24) & 0xBF;
    }
}

static int usage(void) {
    fprintf(stderr, "usage: harness woolly|vec_dot|repack TYPE NTOK REPS [IMPL]\n"
                    "       harness info TYPE IMPL\n"
                    "       harness check TYPE NTOK IMPL\n"
                    "TYPE: q4_k q5_k q6_k q8_0 iq4_xs mxfp4; NTOK 1..%d (a multiple of 4 for repack > 1)\n",
            MAX_TOK);
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 4) return usage();
    const char *side = argv[1];
    const type_case *c = find_case(argv[2]);
    if (!c) {
        fprintf(stderr, "harness: unknown type %s\n", argv[2]);
        return usage();
    }
    if (!strcmp(side, "info")) {
        const k_type_kernels *set = woolly_set(atoi(argv[3]), c->type);
        if (!set) {
            fprintf(stderr, "harness: impl %s has no kernel for %s\n", argv[3], c->name);
            return 2;
        }
        if (woolly_packed(set)) printf("packed x%d\n", set->pack_rows);
        else printf("driver\n");
        return 0;
    }
    if (argc < 5) return usage();
    const int check = !strcmp(side, "check");
    const int ntok = atoi(argv[3]), reps = check ? 1 : atoi(argv[4]);
    const int impl = check ? atoi(argv[4]) : argc > 5 ? atoi(argv[5]) : -1;
    if (ntok < 1 || ntok > MAX_TOK || reps < 0) return usage();
    if ((check || !strcmp(side, "woolly")) && (impl <= K_IMPL_REF || impl >= K_IMPL_MAX || !woolly_set(impl, c->type))) {
        fprintf(stderr, "harness: woolly needs an arm64 impl id with a %s kernel, got %s\n", c->name,
                argc > 5 ? argv[5] : "none");
        return 2;
    }
    if (!strcmp(side, "repack")) {
        if (!c->gemv) {
            printf("none\n");
            return 3;
        }
        if (ntok > 1 && ntok % 4 != 0) return usage();
    } else if (!check && strcmp(side, "woolly") && strcmp(side, "vec_dot")) {
        return usage();
    }

    const int act = k_act_type(c->type);
    const int64_t rb = k_row_bytes(c->type, N_WEIGHTS), ab = k_row_bytes(act, N_WEIGHTS);
    if (rb <= 0 || ab <= 0) {
        fprintf(stderr, "harness: no row size for %s\n", c->name);
        return 2;
    }
    unsigned char *w = malloc((size_t)rb * ROWS), *packed = malloc((size_t)rb * ROWS);
    unsigned char *a = malloc((size_t)ab * MAX_TOK);
    float *y = calloc((size_t)ROWS * MAX_TOK, sizeof(float));
    if (!w || !packed || !a || !y) {
        fprintf(stderr, "harness: out of memory\n");
        return 1;
    }
    fill(w, (size_t)rb * ROWS, 1);
    fill(a, (size_t)ab * MAX_TOK, 2);
    if (check || !strcmp(side, "woolly")) {
        const k_type_kernels *set = woolly_set(impl, c->type);
        if (woolly_packed(set)) set->pack(N_WEIGHTS, w, (size_t)rb, ROWS, packed);
    }

    if (check) {
        float *ref = calloc((size_t)ROWS * MAX_TOK, sizeof(float));
        if (!ref) return 1;
        if (woolly_product(impl, c, w, packed, (size_t)rb, a, (size_t)ab, ntok, y) != 0) return 1;
        llama_vec_dot(c, w, (size_t)rb, a, (size_t)ab, ntok, ref);
        float big = 0;
        for (int k = 0; k < ROWS * ntok; k++) big = fabsf(ref[k]) > big ? fabsf(ref[k]) : big;
        for (int k = 0; k < ROWS * ntok; k++)
            if (!(fabsf(y[k] - ref[k]) <= 1e-4f * big)) {
                printf("mismatch %s ntok=%d: row %d token %d: woolly %g, llama.cpp vec_dot %g\n", c->name, ntok,
                       k % ROWS, k / ROWS, y[k], ref[k]);
                return 1;
            }
        printf("ok %s ntok=%d (%d outputs, largest %g)\n", c->name, ntok, ROWS * ntok, big);
        return 0;
    }

    double sum = 0;
    for (int i = 0; i < reps; i++) {
        if (!strcmp(side, "woolly")) {
            if (woolly_product(impl, c, w, packed, (size_t)rb, a, (size_t)ab, ntok, y) != 0) {
                fprintf(stderr, "harness: Woolly's driver refused %s\n", c->name);
                return 1;
            }
        } else if (!strcmp(side, "vec_dot")) {
            llama_vec_dot(c, w, (size_t)rb, a, (size_t)ab, ntok, y);
        } else {
            llama_repack(c, w, a, ntok, y);
        }
    }
    for (int k = 0; k < ROWS * ntok; k++) sum += y[k]; /* outside the counted loop */
    printf("%s %s ntok=%d reps=%d rows=%d n=%d checksum=%g\n", side, c->name, ntok, reps, ROWS, N_WEIGHTS, sum);
    free(w);
    free(packed);
    free(a);
    free(y);
    return 0;
}
