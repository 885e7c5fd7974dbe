"""Minimal, independent safetensors reader/writer for Hone's golden scripts.

Written from the format description (8-byte little-endian header length, JSON header,
data area), with json + struct + torch only: Debian's python has no `safetensors`
package. Not derived from Hone's Go code.
"""
import json
import struct

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}
NAMES = {v: k for k, v in DTYPES.items()}
SIZES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8}


def read(path):
    """Returns (metadata, {name: tensor}, header_len); validates the layout strictly."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    hdr_bytes = raw[8:8 + n]
    assert hdr_bytes[:1] == b"{", "header must start with {"
    hdr = json.loads(hdr_bytes.decode("utf-8"))
    data = raw[8 + n:]
    meta = hdr.pop("__metadata__", None)
    spans = []
    out = {}
    for name, e in hdr.items():
        dt = e["dtype"]
        assert dt in DTYPES, f"{name}: dtype {dt} not handled by this checker"
        b, end = e["data_offsets"]
        numel = 1
        for d in e["shape"]:
            numel *= d
        assert end - b == numel * SIZES[dt], f"{name}: byte length does not match shape"
        spans.append((b, end, name))
        buf = bytearray(data[b:end])
        t = torch.frombuffer(buf, dtype=DTYPES[dt]) if numel else torch.empty(0, dtype=DTYPES[dt])
        out[name] = t.reshape(e["shape"]).clone()
    spans.sort()
    at = 0
    for b, end, name in spans:
        assert b == at, f"{name}: starts at {b}, expected {at} (hole or overlap)"
        at = end
    assert at == len(data), "data area not fully covered"
    return meta, out, n


def write(path, tensors, metadata):
    """Writes {name: tensor} in name order, header padded with spaces to 8 bytes."""
    header = {"__metadata__": metadata}
    blobs = []
    off = 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        b = t.view(torch.int16).numpy().tobytes() if t.dtype in (torch.bfloat16, torch.float16) else t.numpy().tobytes()
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
