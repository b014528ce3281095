// A rank's place in a parallel training run, built once at start-up: the layout, the world
// communicator (dense data parallelism) and the expert group's communicator (the EP x ETP ranks
// of one edp coordinate, among which each expert block and width slice lives once), with the
// model::ExpertExchange the MoE layers use. A Context of one rank (no Session, no MPI) serves
// the plain single-process run through the same code.
#pragma once

#include <memory>

#include "trex/dist/communicator.h"
#include "trex/dist/layout.h"
#include "trex/model/expert_exchange.h"

namespace trex::dist {

class Session;

class Context {
 public:
  // The process alone.
  Context();
  // Resolves the layout (throws InputError naming the field before any collective) and builds
  // the communicators. Collective over the session's world.
  Context(Session& session, const LayoutRequest& request, const model::ModelConfig& model, int64_t micro_batches);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const ParallelLayout& layout() const { return layout_; }
  int rank() const { return world_.rank(); }
  int world_size() const { return world_.size(); }
  Communicator& world() { return world_; }
  Communicator& expert_group() { return expert_; }
  // nullptr when ep x etp == 1 (every expert whole on every rank).
  model::ExpertExchange* expert_exchange() { return layout_.ep * layout_.etp > 1 ? exchange_.get() : nullptr; }
  Session* session() { return session_; }

 private:
  ParallelLayout layout_;
  Communicator world_, expert_;
  std::unique_ptr<model::ExpertExchange> exchange_;
  Session* session_ = nullptr;
};

}  // namespace trex::dist
