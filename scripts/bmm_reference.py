#!/usr/bin/env python3
"""cuBLAS reference figures for vk-sgmat's batched GEMM (`vk-sgmat bench --batch B`): times
torch.bmm on the same batches, shapes and types, median of CUDA-event timings after a warm-up, and
prints one JSON line per point:
{"peer": "torch.bmm", "batch": .., "types": "f16:f32", "m": .., "n": .., "k": .., "layout": ..,
 "median_ms": .., "tflops": ..}

Usage: python3 scripts/bmm_reference.py [--batch 32] [--types f16:f32,f16:f16]
                                        [--shapes 128x128x64,1024x1024x128,...] [--shared-b]

Each point is timed with B stored as is (nn) and stored transposed (nt, B[i] held as N x K and
multiplied through its transposed view, as attention's K is): the faster is the reference, since
a reference is only as good as its fastest path. f16:f32 uses torch.bmm(a, b, out_dtype=float32)
where the installed PyTorch has it (the same output bytes as vk-sgmat's f16 -> f32); otherwise
the line says "na" and why. --shared-b multiplies every entry by one B (expanded, stride 0)."""
import argparse
import json

import torch

from cublas_reference import time_op

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--types", default="f16:f32,f16:f16")
    p.add_argument("--shapes", default="128x128x64,1024x1024x128,2048x2048x128,2048x128x2048")
    p.add_argument("--shared-b", action="store_true")
    args = p.parse_args()
    dev = torch.device("cuda")
    for types in args.types.split(","):
        inp, out = types.split(":")
        for shape in args.shapes.split(","):
            m, n, k = (int(x) for x in shape.split("x"))
            a = torch.randn(args.batch, m, k, device=dev).to(DTYPES[inp])
            nb = 1 if args.shared_b else args.batch
            best = None
            for layout in ("nn", "nt"):
                if layout == "nn":
                    b = torch.randn(nb, k, n, device=dev).to(DTYPES[inp])
                else:
                    b = torch.randn(nb, n, k, device=dev).to(DTYPES[inp]).transpose(1, 2)
                if args.shared_b:
                    b = b.expand(args.batch, k, n)
                if out == inp:
                    fn = lambda a=a, b=b: torch.bmm(a, b)
                else:
                    fn = lambda a=a, b=b: torch.bmm(a, b, out_dtype=DTYPES[out])
                try:
                    fn()
                except (TypeError, RuntimeError) as e:
                    print(json.dumps({"peer": "torch.bmm", "batch": args.batch, "types": types,
                                      "m": m, "n": n, "k": k, "layout": layout,
                                      "na": str(e).splitlines()[0]}))
                    continue
                ms = time_op(fn)
                row = {"peer": "torch.bmm", "batch": args.batch, "types": types, "m": m, "n": n,
                       "k": k, "layout": layout, "shared_b": args.shared_b, "median_ms": ms,
                       "tflops": 2.0 * args.batch * m * n * k / ms / 1e9}
                print(json.dumps(row), flush=True)
                if best is None or ms < best["median_ms"]:
                    best = row
            if best is not None:
                print(json.dumps({**best, "peer": "torch.bmm best"}), flush=True)


if __name__ == "__main__":
    main()
