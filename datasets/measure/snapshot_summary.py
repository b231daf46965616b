"""snapshot_summary.py: which tensors make a measured peak, as a short text file.

The worker (measure_worker.py) captures, at the moment the allocated memory of the last step is
highest between two operators, two views of the same instant:
  * the caching allocator's live blocks, from torch.cuda.memory._snapshot() while
    _record_memory_history() runs: address, size and the Python frames that allocated each;
  * the tensors the step's operators produced, from a TorchDispatchMode: storage address, shape,
    dtype, the aten operator, and the role (parameter, gradient, optimizer state) where known.
This module joins them on the address and writes the summary. It imports nothing outside the
standard library, so test_measure.py checks it without torch.

A capture is a dict:
  {"allocated": bytes at the captured operator boundary,
   "max_allocated": torch.cuda.max_memory_allocated() of the step (includes operator-internal
                    temporaries that no boundary sees),
   "tensors": [{"ptr", "nbytes", "shape", "dtype", "op", "role"}],
   "blocks": [{"address", "size", "frames": ["file:line function", ...]}]}
"""

MIB = float(1 << 20)
GIB = float(1 << 30)

# Frames inside these paths name the code that asked for the memory; the first one wins.
_CODE_MARKERS = ("transformers/", "peft/", "torch/nn/", "torch/optim/", "torch/distributed/",
                 "bitsandbytes/", "torch/utils/checkpoint")


def pick_frame(frames):
    """The most telling frame of an allocation: the first in model, PEFT or torch.nn code."""
    for f in frames:
        if any(m in f for m in _CODE_MARKERS):
            return f
    return frames[0] if frames else ""


def short_path(frame):
    """'/usr/lib/python3/site-packages/transformers/x.py:12 f' -> 'transformers/x.py:12 f'."""
    for m in ("site-packages/", "dist-packages/"):
        at = frame.rfind(m)
        if at >= 0:
            return frame[at + len(m):]
    return frame


def _shape(t):
    return "x".join(str(d) for d in t.get("shape", ())) or "scalar"


def summarize(capture, title="", top=25):
    """The summary text of one capture (see the module comment), largest first.

    Parameters, gradients and optimizer states are one line each (there are hundreds and their
    size is the model's, known exactly); every other live tensor is listed by size down to `top`
    lines, the rest counted. Allocator blocks with no tensor record (workspaces, tensors made
    outside the dispatcher) are counted with their allocating frame.
    """
    tensors = {t["ptr"]: t for t in capture.get("tensors", ())}
    blocks = capture.get("blocks", ())
    seen = set()
    rows, untracked = [], []
    for b in blocks:
        t = tensors.get(b["address"])
        frame = short_path(pick_frame(b.get("frames", ())))
        if t is None:
            untracked.append((b["size"], frame))
            continue
        seen.add(b["address"])
        rows.append((b["size"], t, frame))
    for ptr, t in tensors.items():  # tensors whose block was not captured (no history)
        if ptr not in seen:
            rows.append((t["nbytes"], t, ""))
    groups = {}
    listed = []
    for size, t, frame in rows:
        role = t.get("role") or ""
        if role:
            n, total = groups.get(role, (0, 0))
            groups[role] = (n + 1, total + size)
        else:
            listed.append((size, t, frame))
    listed.sort(key=lambda r: (-r[0], r[1].get("op", ""), _shape(r[1])))
    untracked.sort(key=lambda r: (-r[0], r[1]))

    out = []
    if title:
        out.append(title)
    alloc, peak = capture.get("allocated", 0), capture.get("max_allocated", 0)
    out.append(f"allocated at the captured operator boundary: {alloc / GIB:.3f} GiB; "
               f"max_memory_allocated of the step: {peak / GIB:.3f} GiB "
               f"(the difference is operator-internal temporaries)")
    tracked = sum(r[0] for r in rows)
    out.append(f"live tensors with a record: {len(rows)}, {tracked / GIB:.3f} GiB; "
               f"allocator blocks without one: {len(untracked)}, "
               f"{sum(u[0] for u in untracked) / GIB:.3f} GiB")
    out.append("")
    out.append(f"{'MiB':>10}  {'count':>5}  what")
    lines = [(total, f"{total / MIB:10.1f}  {n:5d}  {role}s") for role, (n, total) in groups.items()]
    for size, t, frame in listed[:top]:
        where = f" at {frame}" if frame else ""
        lines.append((size, f"{size / MIB:10.1f}  {1:5d}  {_shape(t)} {t.get('dtype', '?')} "
                            f"from aten.{t.get('op', '?')}{where}"))
    lines.sort(key=lambda x: (-x[0], x[1]))
    out += [text for _, text in lines]
    rest = listed[top:]
    if rest:
        out.append(f"{sum(r[0] for r in rest) / MIB:10.1f}  {len(rest):5d}  other tensors")
    for size, frame in untracked[:5]:
        out.append(f"{size / MIB:10.1f}  {1:5d}  (no tensor record) at {frame or '?'}")
    if len(untracked) > 5:
        out.append(f"{sum(u[0] for u in untracked[5:]) / MIB:10.1f}  {len(untracked) - 5:5d}  "
                   "other blocks without a tensor record")
    return "\n".join(out) + "\n"
