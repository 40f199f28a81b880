#!/bin/bash
# Issue 16, for the next session with device time and a two-GPU kind (nvidia-h200-x2, or
# nvidia-h100-x2): pinned host operands (MultiContext::gemm_pinned) against the staged host path
# and device-resident operands, one GPU against both, in one call. Not run yet: the session that
# wrote it had 146 s of device time. Run from the checkout's root with carry [".gl","carry"]:
#   export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
#   for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; bash docs/perf/x2-pinned-1.sh | tee $OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
nvidia-smi topo -m 2>&1 | head -6
python3 carry/h2d_bandwidth.py 1024 2>&1 | tail -6
carry/vk-sgmat info 2>&1 | grep -i -E "^device|import" | head -6
echo "== checks: odd shapes, every row of the sample, the pinned path beside the staged one"
timeout 120 carry/vk-sgmat gemm 4099 4097 4096 --devices all --repeat 3 2>&1 | tail -4
timeout 120 carry/vk-sgmat gemm 8191 8193 4097 --devices all --layout nt --beta 0.5 --split cols --repeat 3 2>&1 | tail -4
echo "checked at $SECONDS s"
echo "== bench: 8192^3 and 16384^3, f16 -> f32, medians of 7 (GPUs warmed a second each first)"
timeout 400 carry/vk-sgmat bench --devices all --reps 7 2>&1
echo "done at $SECONDS s"
