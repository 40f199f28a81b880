#!/usr/bin/env python3
"""cuBLAS reference figures for vk-sgmat's benchmarks: times torch.matmul (torch._int_mm for int8)
on the same shapes and types, median of CUDA-event timings after a warm-up, and prints JSON lines:
{"types": "f16:f32", "m": .., "n": .., "k": .., "median_ms": .., "tflops": ..}

Usage: python3 scripts/cublas_reference.py [--types f16:f32,bf16:f32,i8:i32] [--shapes 4096x4096x4096,...]
                                          [--layout nn|nt] [--model llama-7b|llama-3-8b|mixtral-expert]
--layout nt stores B transposed (N x K, K contiguous) and multiplies by its transposed view, as
model weights are held. int8 always runs that way (torch._int_mm(a, b_t.t())): it is cuBLAS's
int8 TN kernel, its fast path (the row-major B of `nn` runs a slow path, about 6x slower on the
H200), and a reference is only as good as its fastest path. Each line says its "layout".
f16:f32 means f16 inputs with f32 accumulation (cuBLAS's default for torch.float16 matmul, output f16);
f16:f16 is the same call (cuBLAS may accumulate in f32 there too). With --f32-out, float inputs with
an f32 result use torch.mm(a, b, out_dtype=torch.float32): the same output bytes as vk-sgmat's
f16->f32, which matters where writing C is a large part of the time (short K)."""
import argparse
import json
import statistics

import torch


# The layers of `vk-sgmat bench --model` (src/bin/vk-sgmat/models.rs): (N, K) per GEMM.
MODELS = {
    "llama-7b": [(12288, 4096), (4096, 4096), (22016, 4096), (4096, 11008)],
    "llama-3-8b": [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)],
    "mixtral-expert": [(28672, 4096), (4096, 14336)],
}
TOKENS = [1, 8, 32, 128, 512, 2048]


def time_op(fn, warmup_s=0.5, repeat=30):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    # Warm up until clocks rise (the GPU idles at a few hundred MHz).
    t0 = torch.cuda.Event(enable_timing=True)
    t0.record()
    while True:
        fn()
        end.record()
        end.synchronize()
        if t0.elapsed_time(end) > warmup_s * 1e3:
            break
    times = []
    for _ in range(repeat):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--types", default="f16:f32,bf16:f32,i8:i32")
    p.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192")
    p.add_argument("--model", choices=sorted(MODELS),
                   help="a layer's GEMMs at 1..2048 tokens instead of --shapes (as `vk-sgmat bench --model`; use --layout nt)")
    p.add_argument("--layout", default="nn", choices=["nn", "nt"],
                   help="B row-major (nn) or stored transposed (nt); int8 always uses nt")
    p.add_argument("--f32-out", action="store_true",
                   help="f32 results for float inputs with an f32 result type (torch.mm out_dtype)")
    args = p.parse_args()
    if args.model:
        args.shapes = ",".join(f"{t}x{n}x{k}" for t in TOKENS for n, k in MODELS[args.model])
    dev = torch.device("cuda")
    # f32:f32 is plain SGEMM: no TF32 rounding (the caller asked for f32 accuracy).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    for types in args.types.split(","):
        for shape in args.shapes.split(","):
            m, n, k = (int(x) for x in shape.split("x"))
            inp = types.split(":")[0]
            if inp == "i8":
                if m <= 16:
                    continue  # torch._int_mm needs M > 16
                a = torch.randint(-128, 127, (m, k), dtype=torch.int8, device=dev)
                b_t = torch.randint(-128, 127, (n, k), dtype=torch.int8, device=dev)
                b = b_t.t()  # K x N, column-major: cuBLAS's TN int8 kernel
                layout = "nt"
                fn = lambda: torch._int_mm(a, b)
            else:
                dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[inp]
                a = torch.randn(m, k, dtype=dt, device=dev)
                layout = args.layout
                b = torch.randn(n, k, dtype=dt, device=dev).t() if layout == "nt" else torch.randn(k, n, dtype=dt, device=dev)
                if args.f32_out and types.split(":")[1] == "f32" and inp != "f32":
                    fn = lambda: torch.mm(a, b, out_dtype=torch.float32)
                else:
                    fn = lambda: torch.matmul(a, b)
            ms = time_op(fn)
            print(json.dumps({"types": types, "m": m, "n": n, "k": k, "median_ms": ms, "layout": layout,
                              "tflops": 2.0 * m * n * k / (ms * 1e-3) / 1e12,
                              "device": torch.cuda.get_device_name(), "torch": torch.__version__,
                              "f32_out": bool(args.f32_out and types.endswith(":f32") and inp != "f32")}), flush=True)


if __name__ == "__main__":
    main()
