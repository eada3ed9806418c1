#!/usr/bin/env python3
"""scripts/encoder-ref.py — llama.cpp references for the encoder minis.

Writes runtime/testdata/encoder/: tokens.json (llama-tokenize's ids for a
set of prompts on the minis' WordPiece vocabulary) and one JSON file per
(model, pooling, prompt) with llama-embedding's output, the exact command
and the prompt. The minis come from `woolly synth` (Q8_0, seed 1):

    go run ./cmd/woolly synth --preset bert-mini --type q8_0 -o DIR/bert-mini-Q8_0.gguf
    (the same for nomic-bert-mini, bert-rerank-mini and gemma-embedding-mini)
    python3 scripts/encoder-ref.py LLAMA_BIN_DIR DIR

LLAMA_BIN_DIR holds llama-embedding and llama-tokenize built at the
reference commit (see runtime/testdata/encoder/README.md). Each prompt is
run alone (one sequence per llama-embedding run: the reference's attention
path depends on the batch's row count), -c 512, one thread, repacking off.
"""
import json
import os
import subprocess
import sys
import tempfile

SHORT = "Once upon a time there was a little cat."
# More than 64 tokens: the reference's tiled f32 attention path.
LONG = ("The little dog ran to the park with his friend the cat. They played with a red ball "
        "under the big tree, and when the sun went down they walked home together, happy and "
        "tired, and their mother gave them warm milk and a kiss before bed. What a day it was "
        "for the little dog and the cat!")
MARKS = "Café naïve résumé — 中文 text, HELLO world!"
RUNS = {
    "bert-mini-Q8_0": [("mean", SHORT, "short"), ("mean", LONG, "long"), ("cls", SHORT, "short"),
                      ("cls", LONG, "long"), ("none", SHORT, "short"), ("last", MARKS, "marks"),
                      ("mean", MARKS, "marks")],
    "nomic-bert-mini-Q8_0": [("mean", SHORT, "short"), ("mean", LONG, "long"), ("cls", SHORT, "short"),
                            ("none", SHORT, "short"), ("mean", MARKS, "marks")],
    # (pooling none: llama-embedding's output of this one is cut short)
    "gemma-embedding-mini-Q8_0": [("mean", SHORT, "short"), ("mean", LONG, "long"), ("last", LONG, "long"),
                                 ("cls", MARKS, "marks")],
}
# Reranker pairs: query TAB document (llama-embedding's --cls-separator).
PAIRS = [("what is the little cat doing", "the cat sat on the mat", "pair1"),
         ("what is the little cat doing", "a red ball under the big tree", "pair2"),
         ("embedding model", LONG, "pair3")]
TOKEN_PROMPTS = [
    "Once upon a time there was a little cat.",
    "The little dog ran to the park with his friend the cat. They played with a red ball under the big tree.",
    "HELLO, World!!! What's up?",
    "Café naïve résumé Ångström façade",
    "中文日本 and 文字",
    "x@y.com #tag $100 50% (a+b)*c=d ~tilde `code`",
    "tabs\tand\nnewlines\r\n  double  spaces ",
    "[CLS] special [SEP] tokens [MASK] parsed [UNK]",
    "unknown Ω and emoji 🙂 and ß",
    "ह्िंदी text",
    "zero\u200bwidth\u0007bell\u0000nul",
    "supercalifragilisticexpialidocious",
    "",
    "   ",
]
COMMIT = "34af94cd9ab277632e27caeec2d41de2fd091b31"


def embed(exe, path, pooling, prompt, norm):
    args = [exe, "-m", path, "-p", prompt, "--pooling", pooling, "--embd-normalize", str(norm),
            "--embd-output-format", "json", "-c", "512", "-t", "1", "-nr", "--no-warmup"]
    for _ in range(40):  # the output of a long JSON is now and then cut short or garbled
        res = subprocess.run(args, capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"{path} {pooling}: llama-embedding failed:\n{res.stderr[-2000:]}")
        try:
            return args, json.loads(res.stdout)["data"]
        except json.JSONDecodeError as e:
            print(f"{path} {pooling}: unreadable output ({e}), again", file=sys.stderr)
    sys.exit(f"{path} {pooling}: no readable output")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    bins, models = sys.argv[1], sys.argv[2]
    out_dir = os.path.join("runtime", "testdata", "encoder")
    os.makedirs(out_dir, exist_ok=True)
    exe = os.path.join(bins, "llama-embedding")
    for name, runs in RUNS.items():
        path = os.path.join(models, name + ".gguf")
        for pooling, prompt, tag in runs:
            args, data = embed(exe, path, pooling, prompt, 2)
            doc = {"model": name, "pooling": pooling, "prompt": prompt, "n_ctx": 512, "llama_commit": COMMIT,
                   "command": " ".join(args[:1] + ["-m", name + ".gguf"] + args[3:4] + ["PROMPT"] + args[5:]),
                   "embeddings": [d["embedding"] for d in data]}
            with open(os.path.join(out_dir, f"{name}.{pooling}.{tag}.json"), "w") as f:
                json.dump(doc, f)
    name = "bert-rerank-mini-Q8_0"
    path = os.path.join(models, name + ".gguf")
    for query, doc_text, tag in PAIRS:
        args, data = embed(exe, path, "rank", query + "\t" + doc_text, -1)
        doc = {"model": name, "pooling": "rank", "query": query, "document": doc_text, "n_ctx": 512,
               "llama_commit": COMMIT,
               "command": " ".join(args[:1] + ["-m", name + ".gguf", "-p", "QUERY<TAB>DOCUMENT"] + args[5:]),
               # rank pooling: the classifier's one output is the first value
               "score": data[0]["embedding"][0]}
        with open(os.path.join(out_dir, f"{name}.rank.{tag}.json"), "w") as f:
            json.dump(doc, f)
    tok = os.path.join(bins, "llama-tokenize")
    cases = []
    for p in TOKEN_PROMPTS:
        with tempfile.NamedTemporaryFile("wb", delete=False) as f:
            f.write(p.encode())
            fn = f.name
        r = subprocess.run([tok, "-m", os.path.join(models, "bert-mini-Q8_0.gguf"), "-f", fn, "--ids", "--log-disable"],
                           capture_output=True, text=True)
        os.unlink(fn)
        if r.returncode != 0:
            sys.exit(r.stderr)
        cases.append({"prompt": p, "ids": json.loads(r.stdout.strip().splitlines()[-1])})
    with open(os.path.join(out_dir, "tokens.json"), "w") as f:
        json.dump({"model": "bert-mini-Q8_0.gguf", "command": "llama-tokenize -m MODEL -f PROMPT_FILE --ids --log-disable",
                   "cases": cases}, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
