#!/usr/bin/env python3
"""The torch side of `vk-sgmat runtime --torch FILE`: one Llama-7B layer's GEMMs at 512 tokens
(QKV 512x12288x4096, output 512x4096x4096, gate+up 512x22016x4096, down 512x4096x11008), f16 in
and out, as torch.matmul calls in one loop on one CUDA stream. Prints {"layer_torch_ms": median}
over 20 timed layers (CUDA events around each) after 2 s of warm-up, on fresh random inputs."""
import json
import time

import torch

SHAPES = [(512, 12288, 4096), (512, 4096, 4096), (512, 22016, 4096), (512, 4096, 11008)]


def main():
    dev = torch.device("cuda")
    ops = [(torch.randn(m, k, device=dev, dtype=torch.float16), torch.randn(k, n, device=dev, dtype=torch.float16))
           for m, n, k in SHAPES]

    def layer():
        for x, w in ops:
            torch.matmul(x, w)

    end = time.time() + 2.0
    while time.time() < end:
        layer()
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        layer()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    print(json.dumps({"layer_torch_ms": times[len(times) // 2], "device": torch.cuda.get_device_name(0)}))


if __name__ == "__main__":
    main()
