#include "trex/dist/layout.h"

#include "trex/model/moe.h"
#include "trex/util/error.h"

namespace trex::dist {

std::string ParallelLayout::describe(const model::ModelConfig& model) const {
  const int E = model.ffn.routed_experts;
  // Whether the expert width's sums come out as in one process (model/moe.h: width blocks).
  const int blocks = model::expert_width_blocks(model.ffn.expert_hidden);
  const std::string exact = blocks % etp == 0 ? ": bit for bit like one process"
                                              : ": like one process up to rounding (etp does not divide the " +
                                                    std::to_string(blocks) + " width blocks)";
  return std::to_string(world()) + (world() == 1 ? " rank" : " ranks") + ": dense data-parallel over " +
         std::to_string(world()) + "; experts edp " + std::to_string(dp) + " x ep " + std::to_string(ep) +
         " x etp " + std::to_string(etp) + " (" + std::to_string(E / ep) + " of " + std::to_string(E) +
         " routed experts per rank" +
         (etp > 1 ? ", " + std::to_string(model.ffn.expert_hidden / etp) + " of each one's " +
                        std::to_string(model.ffn.expert_hidden) + " columns" + exact
                  : std::string()) +
         ")";
}

ParallelLayout resolve_layout(const LayoutRequest& r, int world, const model::ModelConfig& model,
                              int64_t micro_batches) {
  auto positive = [](int v, const std::string& field) {
    if (v < 0) throw InputError::field(field, "must be >= 1 (got " + std::to_string(v) + ")");
  };
  positive(r.dp, r.dp_field);
  positive(r.ep, r.ep_field);
  positive(r.etp, r.etp_field);
  ParallelLayout l;
  l.ep = r.ep > 0 ? r.ep : 1;
  l.etp = r.etp > 0 ? r.etp : 1;
  if (r.dp > 0) {
    l.dp = r.dp;
  } else {
    if (world % (l.ep * l.etp) != 0)
      throw InputError::field(r.ep_field, "ep x etp = " + std::to_string(l.ep * l.etp) +
                                              " does not divide the world size " + std::to_string(world) +
                                              " (mpirun -n)");
    l.dp = world / (l.ep * l.etp);
  }
  if (l.world() != world) {
    // Name the factor that was given last in the product's order of the error: ep if given,
    // else dp (the one a user most likely set by hand).
    const std::string& field = r.ep > 0 ? r.ep_field : r.etp > 0 ? r.etp_field : r.dp_field;
    throw InputError::field(field, "dp x ep x etp = " + std::to_string(l.dp) + " x " + std::to_string(l.ep) + " x " +
                                       std::to_string(l.etp) + " = " + std::to_string(l.world()) +
                                       " is not the world size " + std::to_string(world) + " (mpirun -n)");
  }
  const int E = model.ffn.routed_experts;
  if (E % l.ep != 0)
    throw InputError::field(r.ep_field, "ep " + std::to_string(l.ep) + " does not divide the " + std::to_string(E) +
                                            " routed experts of " + model.name);
  const int64_t f = model.ffn.expert_hidden;
  if (f % l.etp != 0)
    throw InputError::field(r.etp_field, "etp " + std::to_string(l.etp) + " does not divide the expert width " +
                                             std::to_string(f) + " of " + model.name);
  if (micro_batches % world != 0)
    throw InputError::field(r.micro_batches_field,
                            std::to_string(micro_batches) + " micro-batches per step cannot be shared by " +
                                std::to_string(world) + " ranks (each rank runs micro_batches / ranks; make it a "
                                "multiple of " + std::to_string(world) + ")");
  return l;
}

}  // namespace trex::dist
