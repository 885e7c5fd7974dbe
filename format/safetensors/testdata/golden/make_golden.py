"""Writes mixed.safetensors with torch-made tensors of every dtype torch 1.13 has, and
values.json with each element as Python's repr of the float64 value torch gives it.

Usage (from the repository root):
  /usr/bin/python3 format/safetensors/testdata/golden/make_golden.py format/safetensors/testdata/golden

The safetensors bytes are assembled here with json + struct from torch's own memory
(numpy().tobytes()), independently of Hone's writer; tensors are laid out in name order,
header padded with spaces to a multiple of 8. Deterministic (torch.Generator seed 7).
"""
import json
import os
import struct
import sys

import torch

NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
         torch.int8: "I8", torch.uint8: "U8", torch.int16: "I16", torch.int32: "I32", torch.int64: "I64",
         torch.bool: "BOOL"}


def raw_bytes(t):
    if t.dtype in (torch.float16, torch.bfloat16):
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def main(out):
    g = torch.Generator().manual_seed(7)
    special = [0.0, -0.0, 1.0, -2.5, 65504.0, 6.103515625e-05, 5.960464477539063e-08, -5.960464477539063e-08,
               3.0517578125e-05, float("inf"), float("-inf"), float("nan"), 1e-3, 3.14159]
    tensors = {
        "f16.special": torch.tensor(special, dtype=torch.float16),
        "f16.random": (torch.randn(3, 5, generator=g) * 100).to(torch.float16),
        "f16.subnormals": (torch.arange(0, 1024, 37, dtype=torch.int16)).view(torch.float16),
        "bf16.special": torch.tensor(special + [3e38, 1e-40], dtype=torch.bfloat16),
        "bf16.random": torch.randn(4, 3, generator=g).to(torch.bfloat16),
        "f32.random": torch.randn(2, 3, 2, generator=g),
        "f64.random": torch.randn(5, generator=g, dtype=torch.float64),
        "i8": torch.tensor([-128, -1, 0, 1, 127], dtype=torch.int8),
        "u8": torch.tensor([0, 1, 200, 255], dtype=torch.uint8),
        "i16": torch.tensor([-32768, -300, 0, 300, 32767], dtype=torch.int16),
        "i32": torch.tensor([-2147483648, -5, 0, 16777216, 2147483647], dtype=torch.int32),
        "i64": torch.tensor([-(2 ** 40), -1, 0, 2 ** 24, 2 ** 53], dtype=torch.int64),
        "bool": torch.tensor([True, False, True, True], dtype=torch.bool),
        "scalar": torch.tensor(2.75, dtype=torch.float32),
        "empty": torch.zeros(0, 3, dtype=torch.float32),
    }
    header = {"__metadata__": {"format": "pt", "made_by": "make_golden.py"}}
    blobs, off = [], 0
    values = {}
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        b = raw_bytes(t)
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
        values[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape),
                        "values": [repr(float(v)) for v in t.to(torch.float64).flatten().tolist()]}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(os.path.join(out, "mixed.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    with open(os.path.join(out, "values.json"), "w") as f:
        json.dump(values, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
