// The parallel layout of a training run, as plain data, and its check (no MPI here).
//
// The dense part (embeddings, attention, norms, mHC, gates, shared experts, heads) is
// data-parallel over every rank. The routed experts use the folding world = EDP x EP x ETP
// (spec section 7, PP = 1): EP splits the E routed experts into E / EP per rank, ETP splits
// each expert's width f into f / ETP per rank, and EDP replicates that arrangement. A rank's coordinates are
//   rank = etp + ETP (ep + EP edp),
// so the EP group of a rank is the ranks that share its edp and etp.
//
// In the config this is [parallel] dp (= EDP), ep, etp; the flags --dp/--ep/--etp override it.
// Every micro-batch of a step runs on one rank: rank r runs micro-batches r, r + world, ..., so
// run.micro_batches must be a multiple of the world size.
#pragma once

#include <cstdint>
#include <string>

#include "trex/model/config.h"

namespace trex::dist {

// What the user asked for: 0 means "not given" (ep, etp default to 1; dp to world / (ep etp)).
// The field names are what errors name ("parallel.ep" or "--ep").
struct LayoutRequest {
  int dp = 0, ep = 0, etp = 0;
  std::string dp_field = "parallel.dp", ep_field = "parallel.ep", etp_field = "parallel.etp";
  std::string micro_batches_field = "run.micro_batches";
};

struct ParallelLayout {
  int dp = 1, ep = 1, etp = 1;  // dp is the expert-data-parallel size EDP
  int world() const { return dp * ep * etp; }
  // Coordinates of a rank and the rank of coordinates.
  int edp_of(int rank) const { return rank / (ep * etp); }
  int ep_of(int rank) const { return (rank / etp) % ep; }
  int etp_of(int rank) const { return rank % etp; }
  int rank_of(int edp, int ep_index, int etp_index) const { return etp_index + etp * (ep_index + ep * edp); }
  // One line: "4 ranks: dense data-parallel over 4; experts edp 2 x ep 2 x etp 1 (4 of 8 per rank)".
  std::string describe(const model::ModelConfig& model) const;
};

// Resolves the request against the world size, the model and the step's micro-batches. Throws
// InputError naming the field for a layout that cannot work: a size < 1, a product that is not
// the world size, EP not dividing the routed experts, ETP not dividing the expert width,
// or micro_batches not a multiple of the world size.
ParallelLayout resolve_layout(const LayoutRequest& request, int world, const model::ModelConfig& model,
                              int64_t micro_batches);

}  // namespace trex::dist
