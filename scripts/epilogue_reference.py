#!/usr/bin/env python3
"""cuBLAS reference figures for vk-sgmat's fused epilogues (`vk-sgmat gemm --epilogue ... --out`):
median CUDA-event times after a warm-up, one JSON line per point:
{"peer": .., "m": .., "n": .., "k": .., "median_ms": .., "tflops": ..}

- "addmm+gelu": torch.nn.functional.gelu(torch.addmm(bias, a, b), approximate="tanh") in f16
  (what a PyTorch linear layer with GELU runs), B stored N x K (nn.Linear's weight) and used
  through its transposed view, and B stored K x N: the faster is the reference;
- "mm": torch.mm in f16 alone (the plain GEMM the epilogue rides on);
- "int_mm+scale": torch._int_mm on cuBLAS's int8 TN kernel (B column-major), then the i32
  product times row and column scales, stored f16 (the w8a8 dequantising path).

Usage: python3 scripts/epilogue_reference.py [--shapes 4096x4096x4096]"""
import argparse
import json

import torch

from cublas_reference import time_op


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="4096x4096x4096")
    args = p.parse_args()
    dev = torch.device("cuda")
    for shape in args.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        flops = 2.0 * m * n * k

        def emit(peer, ms):
            print(json.dumps({"peer": peer, "m": m, "n": n, "k": k, "median_ms": ms,
                              "tflops": flops / (ms * 1e-3) / 1e12}), flush=True)

        a = torch.randn(m, k, device=dev, dtype=torch.float16)
        bias = torch.randn(n, device=dev, dtype=torch.float16)
        best = None
        for b in (torch.randn(n, k, device=dev, dtype=torch.float16).t(),
                  torch.randn(k, n, device=dev, dtype=torch.float16)):
            ms = time_op(lambda b=b: torch.nn.functional.gelu(torch.addmm(bias, a, b), approximate="tanh"))
            best = ms if best is None else min(best, ms)
        emit("addmm+gelu", best)
        best = None
        for b in (torch.randn(n, k, device=dev, dtype=torch.float16).t(),
                  torch.randn(k, n, device=dev, dtype=torch.float16)):
            ms = time_op(lambda b=b: torch.mm(a, b))
            best = ms if best is None else min(best, ms)
        emit("mm", best)
        ai = torch.randint(-128, 127, (m, k), device=dev, dtype=torch.int8)
        bi = torch.randint(-128, 127, (n, k), device=dev, dtype=torch.int8).t()
        rs = torch.rand(m, 1, device=dev, dtype=torch.float32)
        cs = torch.rand(1, n, device=dev, dtype=torch.float32)
        emit("int_mm+scale", time_op(lambda: (torch._int_mm(ai, bi) * rs * cs).to(torch.float16)))
        emit("int_mm", time_op(lambda: torch._int_mm(ai, bi)))


if __name__ == "__main__":
    main()
