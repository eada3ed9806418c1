#!/usr/bin/env python3
"""serve-load.py — N streaming clients at once against any OpenAI-style server.

    python3 scripts/serve-load.py URL CLIENTS [TOKENS] [ROUNDS] [MODEL]

Each client sends one POST URL/v1/completions at the same moment, a short
prompt of its own, `max_tokens` TOKENS (64), greedy, `stream` (no
`ignore_eos`: Woolly refuses it by name; a client that meets an end-of-text
token early shows it in per_client_tokens, and the aggregate counts what
was received). Prints one JSON line per round: aggregate tokens/s (all tokens /
time until the last client finished), the median and the last client's time
to first token, and the tokens each client received (chunks with text).
The same client drives both servers, so the figures compare like with like:

    woolly serve --models DIR -t 2 --port 8080 &      # DIR/tiny.gguf
    llama-server -m MODEL -t 2 --port 8081 &
    python3 scripts/serve-load.py http://127.0.0.1:8080 8
    python3 scripts/serve-load.py http://127.0.0.1:8081 8
"""
import json
import statistics
import sys
import threading
import time
import urllib.request

WORDS = ["Once upon a time", "The little dog", "Lily wanted to", "In a small town",
         "The old man said", "A bird flew over", "Tom and his sister", "On a rainy day",
         "The king had a", "Under the bridge", "She opened the box", "At the market",
         "The robot could", "A green frog", "Every morning the", "Far in the forest"]


MODEL = "tiny"  # woolly serve's model name (the file DIR/NAME.gguf); llama-server ignores it


def client(url, i, ntok, start, out):
    body = json.dumps({"model": MODEL, "prompt": WORDS[i % len(WORDS)] + f" ({i})",
                       "max_tokens": ntok, "stream": True,
                       "temperature": 0}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    start.wait()
    t0 = time.monotonic()
    first, n = None, 0
    with urllib.request.urlopen(req, timeout=600) as r:
        for line in r:
            line = line.strip()
            if not line.startswith(b"data:") or line == b"data: [DONE]":
                continue
            ev = json.loads(line[5:])
            ch = ev.get("choices") or []
            if ch and ch[0].get("text"):
                n += 1
                if first is None:
                    first = time.monotonic() - t0
    out[i] = (t0, first, time.monotonic(), n)


def round_(url, clients, ntok):
    out = [None] * clients
    start = threading.Event()
    ts = [threading.Thread(target=client, args=(url, i, ntok, start, out)) for i in range(clients)]
    for t in ts:
        t.start()
    start.set()
    for t in ts:
        t.join()
    t0 = min(o[0] for o in out)
    t1 = max(o[2] for o in out)
    ttft = [o[1] for o in out]
    toks = [o[3] for o in out]
    return {"clients": clients, "tokens": sum(toks), "aggregate_tps": round(sum(toks) / (t1 - t0), 2),
            "ttft_median_s": round(statistics.median(ttft), 3), "ttft_last_s": round(max(ttft), 3),
            "per_client_tokens": toks}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    global MODEL
    url, clients = sys.argv[1].rstrip("/"), int(sys.argv[2])
    ntok = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    MODEL = sys.argv[5] if len(sys.argv) > 5 else MODEL
    round_(url, 1, 4)  # warm-up
    for _ in range(rounds):
        print(json.dumps(round_(url, clients, ntok)), flush=True)


if __name__ == "__main__":
    main()
