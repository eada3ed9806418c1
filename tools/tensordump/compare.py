#!/usr/bin/env python3
"""Compare llama.cpp's tensors (tensordump) with Woolly's (TestQwen35Trace).

usage: compare.py LLAMA_DIR WOOLLY_DIR

For each Woolly file NAME-L.f32 with a llama.cpp file of that name (or the
mapped one below), prints max |a-b|, max |a| and the relative figure, in
graph order of llama.cpp's index.txt.
"""
import os
import sys

from array import array


def load(path):
    a = array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    if sys.byteorder != "little":
        a.byteswap()
    return a


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ld, wd = sys.argv[1], sys.argv[2]
    order = [ln.split()[0] for ln in open(os.path.join(ld, "index.txt"))]
    done = set()
    rows = []
    for name in order:
        base = name
        # Woolly's conv_l2 holds q|k|v per row; llama.cpp names the parts.
        if "#" in base and "predelta" in base:
            continue
        if base.startswith("q_conv_predelta-") or base.startswith("k_conv_predelta-"):
            layer = base.rsplit("-", 1)[1]
            wpath = os.path.join(wd, "conv_l2-%s.f32" % layer)
            part = 0 if base.startswith("q") else 1
        else:
            wpath = os.path.join(wd, base + ".f32")
            part = None
        if base in done or not os.path.exists(wpath):
            continue
        done.add(base)
        a = load(os.path.join(ld, base + ".f32"))
        b = load(wpath)
        if part is not None:  # rows of q|k|v, v as wide as q and k together here
            ntok = int(os.environ.get("NTOK", "8"))
            kd = len(a) // ntok
            cc = len(b) // ntok
            b = [x for t in range(ntok) for x in b[t * cc + part * kd:t * cc + (part + 1) * kd]]
        if len(a) != len(b):
            print("%-28s size %d vs %d" % (base, len(a), len(b)))
            continue
        d = [abs(float(x) - float(y)) for x, y in zip(a, b)]
        dm = max(d)
        m = max(abs(x) for x in a)
        print("%-28s max|d| %.3e  max|a| %.3e  rel %.3e  at %d" % (base, dm, m, dm / max(m, 1e-30), d.index(dm)))


if __name__ == "__main__":
    main()
