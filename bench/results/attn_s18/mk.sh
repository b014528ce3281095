#!/bin/bash
# mk.sh NAME: drv2 with the worktree's current kernels (new) against main's (old, kernels_old)
cd /tmp/attn/drv && g++ -O2 -march=native -std=c++20 -I/work/wt/attn/src drv2.cc /tmp/attn/old/sparse_attention.o /tmp/attn/old/attention_tiles.o /tmp/attn/old/tuning.o /work/wt/attn/build/libtrex_kernels.a /work/wt/attn/build/libtrex_core.a /work/wt/attn/build/libtrex_util.a -ltomlplusplus -lpthread -o ab_$1
