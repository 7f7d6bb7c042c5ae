#!/usr/bin/env bash
# One command for a CUDA machine: SegFormer-B2 train + eval throughput and peak
# memory at 512x512 (bf16 autocast, channels_last, random init, synthetic data,
# no network).  Extra arguments go to gpu_check.py; --smoke runs tiny settings
# on CPU.  Stops after GPU_CHECK_TIMEOUT seconds (default 540) whatever happens.
set -euo pipefail
cd "$(dirname "$0")"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x ../.venv/bin/python ]; then PY=../.venv/bin/python; else PY=python3; fi
fi
limit="${GPU_CHECK_TIMEOUT:-540}"
rc=0
timeout --signal=TERM --kill-after=10 "$limit" "$PY" gpu_check.py "$@" || rc=$?
if [ "$rc" -eq 124 ]; then
  echo "gpu_check: stopped after ${limit} s (GPU_CHECK_TIMEOUT); lower --iterations or --eval-images" >&2
fi
exit "$rc"
