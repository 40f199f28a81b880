"""Host <-> GPU copy bandwidth, each GPU alone and all at once (pinned host memory, PyTorch).

Says whether the GPUs share their link to the host: if all at once moves no more than one alone,
a multi-GPU GEMM on host operands cannot beat one GPU by more than its share of the bytes.
Usage: python3 scripts/h2d_bandwidth.py [MiB]
"""
import sys
import threading
import time

import torch

mib = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
n = torch.cuda.device_count()
host = [torch.empty(mib << 20, dtype=torch.uint8).pin_memory() for _ in range(n)]
dev = [torch.empty(mib << 20, dtype=torch.uint8, device=f"cuda:{i}") for i in range(n)]


def copy(i, up, reps=5):
    with torch.cuda.device(i):
        for _ in range(reps):
            if up:
                dev[i].copy_(host[i], non_blocking=True)
            else:
                host[i].copy_(dev[i], non_blocking=True)
        torch.cuda.synchronize(i)


for up in (True, False):
    name = "host->gpu" if up else "gpu->host"
    for i in range(n):
        copy(i, up, 1)
        t = time.perf_counter()
        copy(i, up)
        print(f"{name} gpu{i} alone: {5 * mib / 1024 / (time.perf_counter() - t):.1f} GiB/s")
    threads = [threading.Thread(target=copy, args=(i, up)) for i in range(n)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    print(f"{name} all {n} at once: {5 * mib * n / 1024 / (time.perf_counter() - t):.1f} GiB/s in total")
