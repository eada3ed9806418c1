/*
 * icount.c — a QEMU TCG plugin that counts every guest instruction executed
 * and prints "icount: N" when the program exits (on qemu's log: run with
 * -d plugin, optionally -D FILE).
 *
 * Each translation block adds its instruction count to one counter when it
 * starts executing. By default that is an inline add (no callback, fastest),
 * which is exact for single-threaded programs only: qemu-user runs each guest
 * thread on a host thread of its own, and unsynchronized adds from several
 * can be lost. The option threads=on makes it a callback with an atomic add,
 * for programs that start threads (a Go binary always does).
 */
#include "qemu-plugin-v1.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

static uint64_t executed;
static int threaded;

static void on_exec(unsigned int vcpu, void *n) {
    (void)vcpu;
    __atomic_fetch_add(&executed, (uint64_t)(uintptr_t)n, __ATOMIC_RELAXED);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    const size_t n = qemu_plugin_tb_n_insns(tb);
    if (threaded)
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_exec, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)n);
    else
        qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed, (uint64_t)n);
}

static void on_exit(qemu_plugin_id_t id, void *unused) {
    (void)id;
    (void)unused;
    char line[64];
    snprintf(line, sizeof line, "icount: %llu\n", (unsigned long long)__atomic_load_n(&executed, __ATOMIC_RELAXED));
    qemu_plugin_outs(line);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "threads=on")) threaded = 1;
        else if (strcmp(argv[i], "threads=off")) return -1; /* unknown option */
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_exit, NULL);
    return 0;
}
