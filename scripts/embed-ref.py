#!/usr/bin/env python3
"""scripts/embed-ref.py — reference embeddings for runtime's parity test.

Runs llama.cpp's llama-embedding (built at the reference commit, see
../shared/tools/build-llama-ref.sh; `cmake --build BUILD --target
llama-embedding`) on the shared models and writes one JSON file per
(model, pooling, prompt) to runtime/testdata/embed/, holding the exact
command, the prompt and the L2-normalized embeddings it printed.

    python3 scripts/embed-ref.py /path/to/llama-embedding [../shared/models]

Each prompt is run alone (one sequence per llama-embedding run), with
-c 512 (the context Woolly's test uses too), one thread, repacking off and
--embd-normalize 2. llama-embedding prints 7 decimals.
"""
import json
import os
import shlex
import subprocess
import sys

MODELS = [
    "stories260K-F32", "stories260K-Q8_0", "synth-llama-mini-F16", "synth-llama-mini-Q4_K_M",
    "synth-qwen3-mini-Q4_K_M", "synth-gemma3-mini-Q4_K_M", "synth-granite-mini-Q4_K_M",
    "synth-qwen3moe-mini-Q4_K_M", "synth-phi3-mini-Q4_K_M",
]
SHORT = "Once upon a time there was a little cat."
# Long enough (>= 64 tokens) for the reference's tiled f32 attention path.
LONG = ("The little dog ran to the park with his friend the cat. They played with a red ball "
        "under the big tree, and when the sun went down they walked home together, happy and "
        "tired, and their mother gave them warm milk and a kiss before bed.")
RUNS = [("mean", SHORT, "short"), ("last", SHORT, "short"), ("none", SHORT, "short"),
        ("mean", LONG, "long"), ("last", LONG, "long")]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    exe = sys.argv[1]
    models = sys.argv[2] if len(sys.argv) > 2 else os.path.join("..", "shared", "models")
    out_dir = os.path.join("runtime", "testdata", "embed")
    os.makedirs(out_dir, exist_ok=True)
    commit = "34af94cd9ab277632e27caeec2d41de2fd091b31"
    for name in MODELS:
        path = os.path.join(models, name + ".gguf")
        for pooling, prompt, tag in RUNS:
            args = [exe, "-m", path, "-p", prompt, "--pooling", pooling, "--embd-normalize", "2",
                    "--embd-output-format", "json", "-c", "512", "-t", "1", "-nr", "--no-warmup"]
            # llama-embedding's logger now and then garbles a long line of
            # its JSON: run again until it parses.
            for attempt in range(5):
                res = subprocess.run(args, capture_output=True, text=True)
                if res.returncode != 0:
                    sys.exit(f"{name} {pooling}: llama-embedding failed:\n{res.stderr[-2000:]}")
                try:
                    data = json.loads(res.stdout)["data"]
                    break
                except json.JSONDecodeError as e:
                    print(f"{name} {pooling} {tag}: unreadable output ({e}), again", file=sys.stderr)
            else:
                sys.exit(f"{name} {pooling} {tag}: no readable output in 5 runs")
            shown = ["llama-embedding"] + [os.path.basename(a) if a == path else a for a in args[1:]]
            ref = {
                "model": name + ".gguf", "pooling": pooling, "prompt": prompt, "n_ctx": 512,
                "llama_cpp_commit": commit, "command": shlex.join(shown),
                "embeddings": [d["embedding"] for d in data],
            }
            with open(os.path.join(out_dir, f"{name}.{pooling}.{tag}.json"), "w") as f:
                json.dump(ref, f, separators=(",", ":"))
                f.write("\n")
            print(f"{name} {pooling} {tag}: {len(data)} embedding(s) of {len(data[0]['embedding'])}")


if __name__ == "__main__":
    main()
