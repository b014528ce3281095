// Which layers, and which of the embedding, output head and MTP blocks, each pipeline chunk
// holds. A strategy states it in one of three ways (docs/plan.md, "Pipeline layouts"):
//   - nothing: the main layers split as evenly as possible over pp x vpp chunks, the first
//     chunks taking the remainder; embedding on the first chunk, head and MTP on the last;
//   - first_stage_layers / last_stage_layers (Megatron-Core's
//     --decoder-first/last-pipeline-num-layers): those counts on the first and last chunk,
//     the rest even over the middle ones;
//   - pipeline_layout, Megatron-Core's --pipeline-model-parallel-layout string: chunks
//     separated by '|', each a sequence of E (embedding), t (a transformer layer), m (an MTP
//     block), L (the output head and loss), any of them followed by *N to repeat, e.g.
//     "Et*3|t*4|t*4|t*3mL".
// Chunk k runs on pipeline rank k mod pp (virtual stage k / pp), as in Megatron's interleaving.
#pragma once

#include <string>
#include <vector>

namespace trex::plan {

struct PipelineChunk {
  long first = 0;     // first main layer
  long layers = 0;    // main layers in the chunk
  bool embedding = false;
  bool head = false;
  long mtp = 0;       // MTP blocks
};

struct LayoutSpec {
  std::string layout;          // Megatron layout string; empty = not given
  long first_stage_layers = 0; // 0 = not given
  long last_stage_layers = 0;
};

// Builds the chunks for `layers` main layers and `mtp` MTP blocks (0 when not trained) over
// pp x vpp chunks. Throws InputError::field("strategy.pipeline_layout" or
// "strategy.first_stage_layers") when the layout names the wrong number of chunks or layers.
std::vector<PipelineChunk> pipeline_chunks(const LayoutSpec& spec, long layers, long mtp, long pp, long vpp);

}  // namespace trex::plan
