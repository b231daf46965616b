#!/usr/bin/env python3
"""Whole-step allocator replay: does interleaving the activations change what variable-length
batches strand? (README "The memory model", "Variable-length batches"; not run by ctest.)

The model (engine/model/losspath.c) replays only the loss path's logits-sized tensors over a run
of variable-length steps. This script replays WHOLE training steps of a Qwen-7B-shaped model
(LoRA, checkpointing: 32 blocks, hidden 4096, MLP 11008, vocabulary 151936) through the same
allocator model, engine/model/allocsim.c (compiled here into a shared library), and compares the
reserved peak with the loss-path-only replay over the same step lengths.

Per step, in the order PyTorch allocates and frees them (HF Llama-style block, SDPA, RMSNorm
upcast, gated MLP; non-reentrant checkpointing keeps each block's input): the embedding output,
each block's forward transients (freed inside the block) and its output (kept as the next
block's checkpoint), the final norm, the loss path (qwen-v1 or hf events of losspath.c), then per
block from the last: the recomputed forward with every saved tensor, its backward's gradients,
and the frees.

Usage: python3 tests/research/whole_step_replay.py [CAP] [STEPS] [ORDERS]   (default 1024 300 8)
Prints, per path, the reserved peak minus the packed one in bytes per token and vocabulary entry
at the cap, for each data order, whole step and loss path alone.
"""
import ctypes
import os
import random
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "engine", "model")
BASE = os.path.join(HERE, "..", "..", "engine", "base")


def build_lib():
    out = os.path.join(tempfile.mkdtemp(), "liballocsim.so")
    subprocess.check_call(["cc", "-O2", "-shared", "-fPIC", "-std=c11", "-I" + MODEL, "-I" + BASE,
                           os.path.join(MODEL, "allocsim.c"), "-o", out])
    return ctypes.CDLL(out)


LIB = build_lib()


class Cfg(ctypes.Structure):
    _fields_ = [("capacity", ctypes.c_uint64), ("max_split_size", ctypes.c_uint64),
                ("expandable", ctypes.c_int)]


class Block(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint64), ("size", ctypes.c_uint64), ("prev", ctypes.c_int32),
                ("next", ctypes.c_int32), ("used", ctypes.c_uint8), ("allocated", ctypes.c_uint8),
                ("mapped", ctypes.c_uint8), ("small", ctypes.c_uint8), ("expandable", ctypes.c_uint8)]


class Stats(ctypes.Structure):
    _fields_ = [("allocated", ctypes.c_uint64), ("reserved", ctypes.c_uint64),
                ("peak_allocated", ctypes.c_uint64), ("peak_reserved", ctypes.c_uint64),
                ("segments", ctypes.c_uint32), ("ooms", ctypes.c_uint32)]


class State(ctypes.Structure):
    _fields_ = [("cfg", Cfg), ("blocks", ctypes.POINTER(Block)), ("cap", ctypes.c_uint32),
                ("hi", ctypes.c_uint32), ("n_free", ctypes.c_uint32), ("free_head", ctypes.c_int32),
                ("next_addr", ctypes.c_uint64), ("stats", Stats)]


LIB.allocsim_alloc.argtypes = [ctypes.POINTER(State), ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint32)]
LIB.allocsim_free.argtypes = [ctypes.POINTER(State), ctypes.c_uint32]


class Alloc:
    def __init__(self, n_blocks=8192):
        self.blocks = (Block * n_blocks)()
        self.st = State()
        self.cfg = Cfg(0, 0, 0)
        assert LIB.allocsim_init(ctypes.byref(self.st), ctypes.byref(self.cfg), self.blocks, n_blocks) == 0
        self.live = {}

    def a(self, name, nbytes):
        h = ctypes.c_uint32()
        assert LIB.allocsim_alloc(ctypes.byref(self.st), int(nbytes), ctypes.byref(h)) == 0
        self.live[name] = h.value

    def f(self, name):
        assert LIB.allocsim_free(ctypes.byref(self.st), self.live.pop(name)) == 0


# Loss paths of losspath.c under bf16 autocast: (alloc?, slot, bytes per entry).
QWEN1 = [(1, 0, 2), (1, 1, 2), (1, 2, 2), (1, 3, 4), (0, 1), (1, 4, 4), (0, 0), (0, 4),
         (1, 5, 4), (0, 3), (1, 6, 2), (0, 5), (1, 7, 2), (0, 2), (0, 6), (1, 8, 2), (0, 7), (0, 8)]
HF = [(1, 0, 2), (1, 1, 4), (1, 2, 4), (0, 1), (1, 3, 4), (0, 0), (0, 3),
      (1, 4, 4), (1, 5, 4), (0, 2), (0, 4), (1, 6, 2), (0, 5), (0, 6)]
H, I, LAYERS, V = 4096, 11008, 32, 151936
# one block's forward tensors in call order (bytes per token): norm upcast and output, q, k, v,
# rotated q and k, attention output (+ fp32 logsumexp), o, residual, norm, gate, up, act, product
FWD = [("n1f", 4 * H), ("n1", 2 * H), ("q", 2 * H), ("k", 2 * H), ("v", 2 * H), ("qr", 2 * H),
       ("kr", 2 * H), ("ao", 2 * H + 128), ("o", 2 * H), ("r1", 2 * H), ("n2f", 4 * H),
       ("n2", 2 * H), ("g", 2 * I), ("u", 2 * I), ("act", 2 * I), ("pr", 2 * I), ("d", 2 * H)]


def block_forward(al, t, l):
    for name, b in FWD:
        al.a((l, name), t * b)
    al.a((l, "out"), t * 2 * H)


def block_backward(al, t, l):
    g = lambda n, b: al.a(("g", n), t * b)
    fr = lambda *ns: [al.f(("g", n)) for n in ns]
    drop = lambda *ns: [al.f((l, n)) for n in ns]
    g("pr", 2 * I); drop("d", "pr")
    g("act", 2 * I); g("u", 2 * I); fr("pr"); drop("act", "u")
    g("gate", 2 * I); fr("act"); drop("g")
    g("n2", 2 * H); fr("gate", "u"); drop("n2")
    g("n2f", 4 * H); fr("n2"); drop("n2f")
    g("r1", 2 * H); fr("n2f"); drop("r1", "o")
    g("ao", 2 * H); g("dq32", 4 * H); g("q", 2 * H); g("k", 2 * H); g("v", 2 * H); fr("dq32", "ao")
    drop("ao", "qr", "kr"); g("qq", 2 * H); g("kk", 2 * H); fr("q", "k"); drop("q", "k", "v")
    g("n1", 2 * H); fr("qq", "kk", "v"); drop("n1")
    g("n1f", 4 * H); fr("n1"); drop("n1f")
    g("in", 2 * H); fr("n1f")
    g("x", 2 * H); fr("in", "r1"); al.f(("grad",)); al.live[("grad",)] = al.live.pop(("g", "x"))


def loss_path(al, t, path):
    for e in path:
        if e[0]:
            al.a(("L", e[1]), t * V * e[2])
        else:
            al.f(("L", e[1]))


def whole_step(al, t, path):
    al.a(("x", 0), t * 2 * H)
    for l in range(LAYERS):                 # forward under checkpointing: keep only the output
        block_forward(al, t, l)
        for name, _ in FWD:
            al.f((l, name))
        al.live[("x", l + 1)] = al.live.pop((l, "out"))
    al.a("nf", t * 4 * H); al.a("n", t * 2 * H); al.f("nf")
    loss_path(al, t, path)
    al.a(("grad",), t * 2 * H); al.f("n")   # lm_head backward: grad of the final norm's output
    al.f(("x", LAYERS))                     # final norm backward: its saved input goes
    for l in reversed(range(LAYERS)):       # recompute, then backward, then drop the checkpoint
        block_forward(al, t, l)
        al.f((l, "out"))
        block_backward(al, t, l)
        al.f(("x", l))
    al.f(("grad",))
    assert not al.live, list(al.live)[:5]


def excess(lengths, cap, path, whole):
    def run(lens):
        al = Alloc()
        for s in lens:
            if whole:
                whole_step(al, s, path)
            else:
                loss_path(al, s, path)
        return al.st.stats.peak_reserved
    return (run(lengths) - run([cap, cap])) / (cap * V)


def main(argv):
    cap = int(argv[1]) if len(argv) > 1 else 1024
    steps = int(argv[2]) if len(argv) > 2 else 300
    orders = int(argv[3]) if len(argv) > 3 else 8
    for name, path in (("qwen-v1", QWEN1), ("hf", HF)):
        whole, alone = [], []
        for order in range(orders):
            r = random.Random(order)
            lens = [r.randint(1, cap) for _ in range(steps)]
            whole.append(excess(lens, cap, path, True))
            alone.append(excess(lens, cap, path, False))
        print("%-8s cap %d, %d steps: whole step %s (median %.1f); loss path alone %s (median %.1f)" % (
            name, cap, steps, " ".join("%.1f" % x for x in whole), statistics.median(whole),
            " ".join("%.1f" % x for x in alone), statistics.median(alone)))


if __name__ == "__main__":
    main(sys.argv)
