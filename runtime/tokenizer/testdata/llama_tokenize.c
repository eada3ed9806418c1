// Harness for TestDifferentialLlama: tokenizes length-prefixed cases with a
// llama.cpp build and prints the ids and the four llama_detokenize variants.
// Build against llama.h and libllama, for example:
//   gcc -I$LLAMA/include -I$LLAMA/ggml/include llama_tokenize.c -o llama_tokenize -L$LIBDIR -lllama -lggml -lggml-base
// Input (file): repeated [u32 flags: 1 = add_special, 2 = parse_special][u32 n][n bytes].
// Output: "T id id ..." then "D<k> <hex>" for k = remove_special + 2*unparse_special.
#include "llama.h"
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
static void quiet(enum ggml_log_level l, const char *t, void *u) { (void)l; (void)t; (void)u; }
int main(int argc, char **argv) {
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *m = llama_model_load_from_file(argv[1], mp);
    if (!m) { fprintf(stderr, "load failed\n"); return 1; }
    const struct llama_vocab *v = llama_model_get_vocab(m);
    FILE *f = fopen(argv[2], "rb");
    uint32_t hdr[2];
    int32_t *toks = malloc(sizeof(int32_t) * 1000000);
    char *buf = malloc(10000000);
    while (fread(hdr, 4, 2, f) == 2) {
        char *s = malloc(hdr[1] + 1);
        if (fread(s, 1, hdr[1], f) != hdr[1]) return 2;
        int n = llama_tokenize(v, s, hdr[1], toks, 1000000, hdr[0] & 1, (hdr[0] >> 1) & 1);
        printf("T");
        for (int i = 0; i < n; i++) printf(" %d", toks[i]);
        printf("\n");
        for (int k = 0; k < 4; k++) {
            int d = llama_detokenize(v, toks, n, buf, 10000000, k & 1, (k >> 1) & 1);
            printf("D%d ", k);
            for (int i = 0; i < d; i++) printf("%02x", (unsigned char)buf[i]);
            printf("\n");
        }
        free(s);
    }
    return 0;
}
