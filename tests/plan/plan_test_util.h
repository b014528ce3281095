// Shared helpers of the plan tests: shipped configs by name, a small synthetic cluster.
#pragma once

#include <string>

#include "trex/model/config.h"
#include "trex/plan/cluster.h"
#include "trex/plan/strategy.h"

namespace trex::plan::testing {

inline std::string source_path(const std::string& rel) { return std::string(TREX_SOURCE_DIR) + "/" + rel; }

inline model::ModelConfig shipped_model(const std::string& name) {
  return model::load_model_config(source_path("configs/model/" + name + ".toml"));
}

inline Cluster shipped_cluster(const std::string& name) { return load_cluster(source_path("configs/cluster/" + name + ".toml")); }

inline Run make_run(long seq, long global_batch, long micro_batch = 1) {
  Run r;
  r.seq_len = seq;
  r.global_batch = global_batch;
  r.micro_batch = micro_batch;
  return r;
}

// Nodes of 8 devices: 100 TFLOPS, 80 GB at 2 TB/s, every factor 1 or 0 so that hand
// arithmetic holds: NVLink 100 GB/s inside a node, 10 GB/s between nodes, no latency.
inline Cluster tiny_cluster(long nodes) {
  Cluster c;
  c.name = "tiny";
  c.nodes = nodes;
  c.devices_per_node = 8;
  c.peak_flops = 100e12;
  c.hbm_bytes = 80e9;
  c.hbm_bw = 2e12;
  c.eff.matmul = c.eff.attention = c.eff.memory = 1;
  c.eff.launch_s = c.eff.comm_launch_s = 0;
  LinkLevel nv{"nvlink", 8, 100e9, 0, 1, "test"};
  LinkLevel ib{"ib", 1 << 20, 10e9, 0, 1, "test"};
  c.links = {nv, ib};
  return c;
}

// A MoE model on d 1024 (8 heads of 128, SwiGLU experts of width 256, vocabulary 32000).
inline model::ModelConfig tiny_moe(int layers, int experts, int top_k) {
  return model::parse_model_config(
      "[model]\nname = \"tiny-moe\"\nvocab = 32000\nhidden = 1024\nlayers = " + std::to_string(layers) +
          "\ntrain_seq_len = 1024\n[attention]\nkind = \"gqa\"\nheads = 8\nkv_heads = 8\nhead_dim = 128\n"
          "rope_dims = 128\n[ffn]\nactivation = \"swiglu\"\nrouted_experts = " + std::to_string(experts) +
          "\ntop_k = " + std::to_string(top_k) + "\nexpert_hidden = 256\n",
      "tiny-moe.toml");
}

}  // namespace trex::plan::testing
