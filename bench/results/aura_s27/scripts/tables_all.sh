#!/bin/bash
# Task 1's tables, one quiet-lane hold each (flock /work/notes/quiet.lock), in order. The
# 180-200-point GEMM spaces take two holds of 3 passes (a, b; merged by bench/aura_merge_tables.py):
# 5 passes of 2048x512x512 in one hold took 4 minutes (15:00:45-15:04:49), over the lane's 3.
# usage: BENCH=/tmp/aura/s27/asb_main tables_all.sh
d="$(dirname "$0")"
q() { flock /work/notes/quiet.lock "$d/table.sh" "$@"; sleep 20; }
for s in 512x512x2048 2048x1024x256 256x512x2048; do PASSES=3 q g_${s}_a gemm:$s; PASSES=3 q g_${s}_b gemm:$s; done
for s in 2048x256x512 512x256x2048; do PASSES=5 q g_$s gemm:$s; done
PASSES=7 q ce_a cross_entropy:64x32768,cross_entropy:128x16384,cross_entropy:256x8192,cross_entropy:32x65536
PASSES=7 q ce_b cross_entropy:128x32768,cross_entropy:512x8192,cross_entropy:256x16384
PASSES=7 q rows swiglu.fwd:1024x4096,swiglu.fwd:2048x2048,swiglu.fwd:4096x1024,swiglu.fwd:512x4096,rmsnorm.fwd:1024x4096,rmsnorm.fwd:4096x1024,rmsnorm.fwd:2048x2048,rmsnorm.fwd:512x4096
