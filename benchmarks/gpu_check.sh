#!/usr/bin/env bash
# One command for a CUDA machine: SegFormer-B2 train + eval throughput and peak
# memory at 512x512 (bf16 autocast, channels_last, random init, synthetic data,
# no network); then the real data path (DiffSeg30k-layout PNG files at 512 and
# 1024 px read through diffzoo's loaders, 0/2/4 workers: images/s and the share
# of time waiting for data) and IMDL-BenCo's detectors when imdlbenco is
# installed.  Extra arguments go to gpu_check.py; --smoke runs tiny settings on
# CPU.  The script keeps its own time budget (--budget, 400 s) and skips what
# would not fit (listed in the JSON's not_measured); this wrapper stops it after
# GPU_CHECK_TIMEOUT seconds (default 480, 8 minutes) whatever happens: SIGTERM,
# on which the script reports what it measured (the --json file too), then
# SIGKILL 10 s later, after which --json holds the figures of the last save
# ("partial": true).
set -euo pipefail
cd "$(dirname "$0")"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x ../.venv/bin/python ]; then PY=../.venv/bin/python; else PY=python3; fi
fi
limit="${GPU_CHECK_TIMEOUT:-480}"
rc=0
timeout --signal=TERM --kill-after=10 "$limit" "$PY" gpu_check.py "$@" || rc=$?
if [ "$rc" -eq 124 ]; then
  echo "gpu_check: stopped after ${limit} s (GPU_CHECK_TIMEOUT); lower --budget, --iterations or --eval-images" >&2
fi
exit "$rc"
