#!/usr/bin/env python3
"""cuBLAS SGEMM's error and speed, for vk-sgmat's f32 modes: C = A*B on f32 inputs uniform in
[-1, 1] (the distribution `vk-sgmat gemm` draws), TF32 off, compared with an f64 product of the
same inputs. Prints one JSON line per shape with the error in vk-sgmat's metric (verify.rs):
||C - C64||_F / || |A||B| ||_F over 256 sampled rows, and the median time of the SGEMM.

Usage: python3 scripts/sgemm_error.py [--shapes 4096x4096x4096,...]"""
import argparse
import json
import statistics

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="4096x4096x4096")
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = torch.device("cuda")
    for shape in args.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        a = torch.rand(m, k, device=dev) * 2 - 1
        b = torch.rand(k, n, device=dev) * 2 - 1
        c = a @ b
        rows = torch.randperm(m, device=dev)[:256]
        a64, b64 = a[rows].double(), b.double()
        want = a64 @ b64
        mag = a64.abs() @ b64.abs()
        err = ((c[rows].double() - want).norm() / mag.norm()).item()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(20):
            a @ b
        times = []
        for _ in range(30):
            start.record()
            a @ b
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        ms = statistics.median(times)
        print(json.dumps({"types": "f32:f32", "m": m, "n": n, "k": k, "rel_error": err, "median_ms": ms,
                          "tflops": 2.0 * m * n * k / (ms * 1e-3) / 1e12, "device": torch.cuda.get_device_name(),
                          "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
