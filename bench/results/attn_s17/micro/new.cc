// This tree's attention_tiles.cc (plus the column_dots_part experiment) in namespace attn_new.
#define attn_detail attn_new
#include "trex/kernels/attention_tiles.cc"
#include "parts.cc"
