/*
 * icount.c — a QEMU TCG plugin that counts every guest instruction executed
 * and prints "icount: N" when the program exits (on qemu's log: run with
 * -d plugin, optionally -D FILE).
 *
 * Each translation block adds its instruction count to one counter when it
 * starts executing (an inline add, no callback). Threads share the counter
 * unsynchronized, so run single-threaded programs only (the proxy does).
 */
#include "qemu-plugin-v1.h"

#include <stdio.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

static uint64_t executed;

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed,
                                             (uint64_t)qemu_plugin_tb_n_insns(tb));
}

static void on_exit(qemu_plugin_id_t id, void *unused) {
    (void)id;
    (void)unused;
    char line[64];
    snprintf(line, sizeof line, "icount: %llu\n", (unsigned long long)executed);
    qemu_plugin_outs(line);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    (void)info;
    (void)argv;
    if (argc != 0) return -1; /* no options */
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_exit, NULL);
    return 0;
}
