#include "trex/dist/context.h"

#include "trex/dist/session.h"

namespace trex::dist {
namespace {

// model::ExpertExchange over the expert-parallel group's communicator.
class MpiExpertExchange : public model::ExpertExchange {
 public:
  MpiExpertExchange(Communicator* comm, int shards) : comm_(comm), shards_(shards) {}
  int ranks() const override { return comm_->size(); }
  int rank() const override { return comm_->rank(); }
  int shards() const override { return shards_; }
  void exchange_counts(const int64_t* send, int64_t* recv, int per) override { comm_->alltoall(send, recv, per); }
  void start_rows(const float* send, const int64_t* send_rows, float* recv, const int64_t* recv_rows,
                  int64_t width) override {
    comm_->start_alltoallv(send, send_rows, recv, recv_rows, width);
  }
  void finish_rows() override { comm_->finish_alltoallv(); }

 private:
  Communicator* comm_;
  int shards_;
};

}  // namespace

Context::Context() { exchange_ = std::make_unique<MpiExpertExchange>(&expert_, 1); }

Context::Context(Session& session, const LayoutRequest& request, const model::ModelConfig& model,
                 int64_t micro_batches)
    : session_(&session) {
  layout_ = resolve_layout(request, session.world(), model, micro_batches);
  if (Session::launched()) {
    world_ = Communicator::world();
    const int r = world_.rank();
    // The expert group: the EP x ETP ranks that share this rank's edp coordinate, ordered by
    // rank (so peer p has ep p / etp and etp p % etp, as model::ExpertExchange expects).
    expert_ = world_.split(layout_.edp_of(r), r % (layout_.ep * layout_.etp));
  }
  exchange_ = std::make_unique<MpiExpertExchange>(&expert_, layout_.etp);
}

Context::~Context() = default;

}  // namespace trex::dist
