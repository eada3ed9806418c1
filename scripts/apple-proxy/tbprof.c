/*
 * tbprof.c — a QEMU TCG plugin that counts the guest instructions executed
 * per translation-block start address, for a per-function breakdown of a
 * run (scripts/apple-proxy/profile.sh maps the addresses to symbols).
 *
 *   qemu-aarch64 -plugin tbprof.so,out=FILE -d plugin -D LOG PROGRAM ...
 *
 * At exit FILE gets one line per start address, "<address, 16 hex digits> <instructions>",
 * and the log "icount: N", the total. Each translated block gets a counter of
 * its own and adds its instruction count to it inline when it starts
 * executing (no callback, so about as fast as icount.c's inline mode). Guest
 * threads run on host threads of their own and the adds are not atomic: two
 * threads running the same block at the same instant can lose a count. A
 * program with one busy thread (a one-thread `woolly bench` or llama-bench:
 * the other threads sleep) loses next to nothing; compare the total with
 * icount.c's threads=on count when it matters.
 */
#include "qemu-plugin-v1.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

struct block {
    uint64_t vaddr;
    uint64_t executed; /* instructions: the block's count times its executions */
};

/* Blocks live in chunks that never move (the inline adds hold pointers). */
enum { CHUNK = 1 << 16 };
struct chunk {
    struct block b[CHUNK];
    size_t n;
    struct chunk *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct chunk *chunks;
static char *out_path;
static int failed;

static struct block *new_block(uint64_t vaddr) {
    if (!chunks || chunks->n == CHUNK) {
        struct chunk *c = calloc(1, sizeof *c);
        if (!c) return NULL;
        c->next = chunks;
        chunks = c;
    }
    struct block *b = &chunks->b[chunks->n++];
    b->vaddr = vaddr;
    return b;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    const uint64_t n = qemu_plugin_tb_n_insns(tb);
    pthread_mutex_lock(&lock);
    struct block *b = new_block(qemu_plugin_tb_vaddr(tb));
    if (!b) failed = 1;
    pthread_mutex_unlock(&lock);
    if (b) qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->executed, n);
}

static int by_vaddr(const void *a, const void *b) {
    const struct block *x = a, *y = b;
    return (x->vaddr > y->vaddr) - (x->vaddr < y->vaddr);
}

static void at_exit(qemu_plugin_id_t id, void *unused) {
    (void)id;
    (void)unused;
    char line[96];
    if (failed) {
        qemu_plugin_outs("tbprof: out of memory for block counters\n");
        return;
    }
    pthread_mutex_lock(&lock);
    size_t n = 0;
    for (struct chunk *c = chunks; c; c = c->next) n += c->n;
    struct block *all = malloc((n ? n : 1) * sizeof *all);
    if (!all) {
        pthread_mutex_unlock(&lock);
        qemu_plugin_outs("tbprof: out of memory at exit\n");
        return;
    }
    size_t k = 0;
    for (struct chunk *c = chunks; c; c = c->next)
        for (size_t i = 0; i < c->n; i++) all[k++] = c->b[i];
    pthread_mutex_unlock(&lock);
    /* a block translated more than once (after a flush) has several counters */
    qsort(all, n, sizeof *all, by_vaddr);
    FILE *f = fopen(out_path, "w");
    if (!f) {
        snprintf(line, sizeof line, "tbprof: cannot create the output file\n");
        qemu_plugin_outs(line);
        free(all);
        return;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < n;) {
        uint64_t v = all[i].vaddr, sum = 0;
        for (; i < n && all[i].vaddr == v; i++) sum += all[i].executed;
        total += sum;
        if (sum) fprintf(f, "%016llx %llu\n", (unsigned long long)v, (unsigned long long)sum);
    }
    int bad = fclose(f) != 0;
    free(all);
    snprintf(line, sizeof line, bad ? "tbprof: writing the output file failed\n" : "icount: %llu\n",
             (unsigned long long)total);
    qemu_plugin_outs(line);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "out=", 4) && argv[i][4]) out_path = strdup(argv[i] + 4);
        else return -1; /* unknown option */
    }
    if (!out_path) return -1; /* out=FILE is required */
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
