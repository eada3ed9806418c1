"""reuse-ttft.py URL MODEL [TOKENS] - time to first token of a conversation's
turn 1 (a prompt of about TOKENS tokens, default 16000) and turn 2 (the same
conversation plus the reply and about 200 new tokens), via
/v1/chat/completions and via /v1/messages (streaming, temperature 0, 4 tokens;
a different conversation for each API). Run against `woolly serve -c N` with N
above TOKENS + 300; see docs/kv-cache.md."""
import json, sys, time, urllib.request, random
URL = sys.argv[1]; MODEL = sys.argv[2]; TARGET = int(sys.argv[3]) if len(sys.argv) > 3 else 16000
def post(path, body, stream=False):
    req = urllib.request.Request(URL + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=7200)
def ntok(text):
    return len(json.load(post("/tokenize", {"model": MODEL, "content": text}))["tokens"])
words = "the cat sat on a mat while river stones glowed under quiet evening light and people walked home slowly talking about markets weather music books".split()
def text(seed, nwords):
    r = random.Random(seed)
    return " ".join(r.choice(words) for _ in range(nwords)) + "."
def sized(seed, target):
    n = int(target * 0.75)
    for _ in range(6):
        t = text(seed, n); k = ntok(t)
        if abs(k - target) < 50: return t, k
        n = int(n * target / k)
    return t, k
def ttft(path, body):
    t0 = time.time(); first = None; out = []; usage = None
    with post(path, body) as r:
        for line in r:
            line = line.decode().strip()
            if not line.startswith("data:"): continue
            d = line[5:].strip()
            if d == "[DONE]": break
            ev = json.loads(d)
            if path.endswith("completions"):
                for c in ev.get("choices", []):
                    if c.get("delta", {}).get("content") and first is None: first = time.time() - t0
                    if c.get("delta", {}).get("content"): out.append(c["delta"]["content"])
                if ev.get("usage"): usage = ev["usage"]
            else:
                if ev.get("type") == "content_block_delta":
                    if first is None: first = time.time() - t0
                    out.append(ev["delta"].get("text", ""))
                if ev.get("type") == "message_start": usage = ev["message"]["usage"]
    return first, "".join(out), usage
def chat(msgs):
    return ttft("/v1/chat/completions", {"model": MODEL, "stream": True, "stream_options": {"include_usage": True}, "max_tokens": 4, "temperature": 0, "messages": msgs})
def messages(msgs):
    return ttft("/v1/messages", {"model": MODEL, "stream": True, "max_tokens": 4, "temperature": 0, "messages": msgs})
for seed, (name, fn) in enumerate([("chat", chat), ("messages", messages)]):
    u1, k1 = sized(seed + 1, TARGET)
    u2, k2 = sized(seed + 100, 200)
    f1, rep, us1 = fn([{"role": "user", "content": u1}])
    f2, _, us2 = fn([{"role": "user", "content": u1}, {"role": "assistant", "content": rep}, {"role": "user", "content": u2}])
    print(f"{name}: turn1 {k1} tok TTFT {f1:.2f}s usage {us1}; turn2 +{k2} tok TTFT {f2:.3f}s usage {us2}; ratio {f2/f1:.4f}", flush=True)
