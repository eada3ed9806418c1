// tensordump: evaluate a token list in one llama_decode batch with llama.cpp
// and write named intermediate tensors of its graph to files, for tracing
// where Woolly and llama.cpp part (see README.md next to this file).
//
// usage: tensordump -m MODEL --tokens ID,ID,... [--then ID,...] -o DIR [--match SUBSTR]... [-t 2]
//
// --then: after the batch, decode these ids one at a time (as refdump's
// greedy steps); their tensors get the suffixes "#2", "#3", ...
// Every graph node whose name contains one of the --match strings (all nodes
// without --match) is written as DIR/NAME.f32 (float32 little-endian, F16 and
// F32 tensors only, ggml's element order: ne[0] fastest) and listed in
// DIR/index.txt as "NAME TYPE OP ne0 ne1 ne2 ne3". A name seen again gets a
// suffix "#2", "#3", ... Context settings as refdump's: n_gpu_layers 0, no
// repacked weights, 2 threads, n_ctx 512, F16 KV cache, flash attention auto.

#include "ggml.h"
#include "ggml-backend.h"
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

struct dumper {
    std::string dir;
    std::vector<std::string> match;
    std::map<std::string, int> seen;
    FILE * index = nullptr;
};

static bool wanted(const dumper * d, const char * name) {
    if (d->match.empty()) {
        return true;
    }
    for (const auto & m : d->match) {
        if (strstr(name, m.c_str()) != nullptr) {
            return true;
        }
    }
    return false;
}

static bool on_tensor(struct ggml_tensor * t, bool ask, void * ud) {
    dumper * d = (dumper *) ud;
    if (!wanted(d, t->name)) {
        return ask ? false : true;
    }
    if (ask) {
        return true;
    }
    if (t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_F16) {
        return true;
    }
    std::string name = t->name;
    int n = ++d->seen[name];
    if (n > 1) {
        name += "#" + std::to_string(n);
    }
    const int64_t ne = ggml_nelements(t);
    std::vector<float> out(ne);
    // gather element by element through the strides (views may be non-contiguous)
    std::vector<uint8_t> raw(ggml_nbytes(t));
    ggml_backend_tensor_get(t, raw.data(), 0, raw.size());
    int64_t k = 0;
    for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
    for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
    for (int64_t i1 = 0; i1 < t->ne[1]; i1++)
    for (int64_t i0 = 0; i0 < t->ne[0]; i0++) {
        const size_t off = i0*t->nb[0] + i1*t->nb[1] + i2*t->nb[2] + i3*t->nb[3];
        if (t->type == GGML_TYPE_F32) {
            memcpy(&out[k], raw.data() + off, 4);
        } else {
            ggml_fp16_t h;
            memcpy(&h, raw.data() + off, 2);
            out[k] = ggml_fp16_to_fp32(h);
        }
        k++;
    }
    std::string path = d->dir + "/" + name + ".f32";
    for (size_t i = d->dir.size() + 1; i < path.size(); i++) {
        if (path[i] == '/') path[i] = '_';
    }
    FILE * f = fopen(path.c_str(), "wb");
    if (!f) {
        fprintf(stderr, "tensordump: cannot write %s\n", path.c_str());
        return false;
    }
    fwrite(out.data(), 4, out.size(), f);
    fclose(f);
    fprintf(d->index, "%s %s %s %lld %lld %lld %lld\n", name.c_str(), ggml_type_name(t->type), ggml_op_desc(t),
            (long long) t->ne[0], (long long) t->ne[1], (long long) t->ne[2], (long long) t->ne[3]);
    return true;
}

static void quiet(enum ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char ** argv) {
    std::string model, toks, then;
    dumper d;
    int threads = 2;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (i + 1 >= argc) { fprintf(stderr, "tensordump: %s needs a value\n", a.c_str()); return 2; }
        if (a == "-m") model = argv[++i];
        else if (a == "--tokens") toks = argv[++i];
        else if (a == "-o") d.dir = argv[++i];
        else if (a == "--then") then = argv[++i];
        else if (a == "--match") d.match.push_back(argv[++i]);
        else if (a == "-t") threads = atoi(argv[++i]);
        else { fprintf(stderr, "tensordump: unknown option %s\n", a.c_str()); return 2; }
    }
    if (model.empty() || toks.empty() || d.dir.empty()) {
        fprintf(stderr, "usage: tensordump -m MODEL --tokens ID,ID,... -o DIR [--match SUBSTR]... [-t 2]\n");
        return 2;
    }
    std::vector<llama_token> ids;
    for (const char * p = toks.c_str(); *p;) {
        char * end;
        long v = strtol(p, &end, 10);
        if (end == p) { fprintf(stderr, "tensordump: bad --tokens\n"); return 2; }
        ids.push_back((llama_token) v);
        p = *end == ',' ? end + 1 : end;
    }
    d.index = fopen((d.dir + "/index.txt").c_str(), "w");
    if (!d.index) { fprintf(stderr, "tensordump: cannot write %s/index.txt\n", d.dir.c_str()); return 1; }
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.use_extra_bufts = false;
    llama_model * m = llama_model_load_from_file(model.c_str(), mp);
    if (!m) { fprintf(stderr, "tensordump: cannot load %s\n", model.c_str()); return 1; }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512;
    cp.n_batch = cp.n_ubatch = 512;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.cb_eval = on_tensor;
    cp.cb_eval_user_data = &d;
    llama_context * ctx = llama_init_from_model(m, cp);
    if (!ctx) { fprintf(stderr, "tensordump: cannot make a context\n"); return 1; }
    llama_batch b = llama_batch_init((int) ids.size(), 0, 1);
    for (size_t i = 0; i < ids.size(); i++) {
        b.token[i] = ids[i]; b.pos[i] = (llama_pos) i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
    }
    b.n_tokens = (int) ids.size();
    if (llama_decode(ctx, b) != 0) { fprintf(stderr, "tensordump: decode failed\n"); return 1; }
    llama_batch_free(b);
    llama_pos pos = (llama_pos) ids.size();
    for (const char * p = then.c_str(); *p;) {
        char * end;
        long v = strtol(p, &end, 10);
        if (end == p) { fprintf(stderr, "tensordump: bad --then\n"); return 2; }
        llama_token id = (llama_token) v;
        llama_batch one = llama_batch_init(1, 0, 1);
        one.token[0] = id; one.pos[0] = pos++; one.n_seq_id[0] = 1; one.seq_id[0][0] = 0; one.logits[0] = 1;
        one.n_tokens = 1;
        if (llama_decode(ctx, one) != 0) { fprintf(stderr, "tensordump: decode failed\n"); return 1; }
        llama_batch_free(one);
        p = *end == ',' ? end + 1 : end;
    }
    fclose(d.index);
    llama_free(ctx);
    llama_model_free(m);
    return 0;
}
