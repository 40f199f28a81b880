#!/usr/bin/env python3
"""cuBLAS reference figures for vk-sgmat's grouped GEMM (`vk-sgmat bench --groups ...`): a
mixture-of-experts layer as a loop of torch.mm over the experts (each expert's rows of A times its
own K x N weight, into its rows of C), timed as one CUDA-event interval around the whole loop,
median after a warm-up; and torch._grouped_mm where the installed PyTorch has it (it takes bf16).
Prints JSON lines: {"peer": .., "types": .., "groups": [..], "n": .., "k": .., "layout": ..,
"median_ms": .., "tflops": ..}

Usage: python3 scripts/grouped_reference.py [--groups 1200,900,700,500,400,200,60,36]
                                            [--n 14336] [--k 4096] [--types f16:f32,f16:f16]
                                            [--epilogue bias-col,silu]
With --epilogue, each expert's GEMM is torch.addmm with the expert's own bias (bias-col) followed
by the activation (relu, gelu, gelu-erf, silu), stored in the output type: what
`vk-sgmat bench --groups --epilogue ...` fuses into its one dispatch.
Weights are timed stored as K x N (nn) and as N x K multiplied through the transposed view (nt,
how nn.Linear holds them); each line says which. f16:f32 uses torch.mm(.., out_dtype=float32)."""
import argparse
import json

import torch

from cublas_reference import time_op

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--groups", default="1200,900,700,500,400,200,60,36")
    p.add_argument("--n", type=int, default=14336)
    p.add_argument("--k", type=int, default=4096)
    p.add_argument("--types", default="f16:f32,f16:f16")
    p.add_argument("--epilogue", default="")
    args = p.parse_args()
    terms = [t for t in args.epilogue.split(",") if t and t != "none"]
    bias_col = "bias-col" in terms
    acts = {"relu": torch.nn.functional.relu, "silu": torch.nn.functional.silu,
            "gelu": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
            "gelu-erf": torch.nn.functional.gelu}
    act = next((acts[t] for t in terms if t in acts), None)
    rows = [int(x) for x in args.groups.split(",")]
    total, n, k = sum(rows), args.n, args.k
    flops = 2.0 * total * n * k
    dev = torch.device("cuda")
    for types in args.types.split(","):
        inp, out = (DTYPES[t] for t in types.split(":"))
        a = torch.randn(total, k, device=dev).to(inp)
        c = torch.empty(total, n, device=dev, dtype=out)
        starts = [sum(rows[:g]) for g in range(len(rows))]
        for layout in ("nn", "nt"):
            if layout == "nn":
                w = [torch.randn(k, n, device=dev).to(inp) for _ in rows]
            else:
                w = [torch.randn(n, k, device=dev).to(inp).t() for _ in rows]

            bias = [torch.randn(n, device=dev).to(inp) for _ in rows]

            def loop():
                for s, m, wg, bg in zip(starts, rows, w, bias):
                    if m == 0:
                        continue
                    if terms:
                        y = torch.addmm(bg, a[s:s + m], wg) if bias_col else torch.mm(a[s:s + m], wg)
                        c[s:s + m] = act(y) if act else y
                    elif out == inp:
                        torch.mm(a[s:s + m], wg, out=c[s:s + m])
                    else:
                        c[s:s + m] = torch.mm(a[s:s + m], wg, out_dtype=out)

            ms = time_op(loop)
            print(json.dumps({"peer": "torch.mm loop", "types": types, "groups": rows, "n": n, "k": k,
                              "layout": layout, "epilogue": args.epilogue or "-", "median_ms": ms,
                              "tflops": flops / ms / 1e9}), flush=True)
    if terms:
        return
    grouped = getattr(torch, "_grouped_mm", None)
    if grouped is None:
        print(json.dumps({"peer": "torch._grouped_mm", "na": "not in this PyTorch"}))
        return
    try:
        a = torch.randn(total, k, device=dev).to(torch.bfloat16)
        w = torch.randn(len(rows), n, k, device=dev).to(torch.bfloat16).transpose(1, 2)
        offs = torch.tensor([sum(rows[:g + 1]) for g in range(len(rows))], device=dev, dtype=torch.int32)
        ms = time_op(lambda: grouped(a, w, offs=offs))
        print(json.dumps({"peer": "torch._grouped_mm", "types": "bf16:bf16", "groups": rows, "n": n, "k": k,
                          "layout": "nt", "median_ms": ms, "tflops": flops / ms / 1e9}), flush=True)
    except (RuntimeError, TypeError) as e:
        print(json.dumps({"peer": "torch._grouped_mm", "na": str(e).splitlines()[0]}))


if __name__ == "__main__":
    main()
