#include "trex/dist/context.h"

#include "trex/core/trace.h"
#include "trex/dist/session.h"
#include "trex/dist/shared_row_exchange.h"

namespace trex::dist {
namespace {

// model::ExpertExchange over the expert-parallel group's communicator.
class MpiExpertExchange : public model::ExpertExchange {
 public:
  MpiExpertExchange(Communicator* comm, int shards) : comm_(comm), shards_(shards) {}
  int ranks() const override { return comm_->size(); }
  int rank() const override { return comm_->rank(); }
  int shards() const override { return shards_; }
  void exchange_counts(const int64_t* send, int64_t* recv, int per, int64_t) override {
    comm_->alltoall(send, recv, per);
  }
  // Traced as two spans, the post (counting the bytes this rank sends, as dist_bench counts an
  // all-to-all's size) and the wait, so that a trace gives each in-step exchange's size and
  // time (bench/dist_exchange_trace.py compares them with dist_bench's raw MPI_Alltoallv).
  void start_rows(const float* send, const int64_t* send_rows, float* recv, const int64_t* recv_rows,
                  int64_t width) override {
    TREX_TRACE(kMoeDispatch, "dist.rows.post");
    int64_t rows = 0;
    for (int p = 0; p < comm_->size(); ++p) rows += send_rows[p];
    core::trace_count(0, double(rows) * double(width) * sizeof(float));
    comm_->start_alltoallv(send, send_rows, recv, recv_rows, width);
  }
  void finish_rows() override {
    TREX_TRACE(kMoeDispatch, "dist.rows.wait");
    comm_->finish_alltoallv();
  }
  void progress_rows() override { comm_->progress_alltoallv(); }

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
  // On one machine the rows go through shared memory (dist/shared_row_exchange.h says why);
  // across machines, or with TREX_DIST_SHM=0, through MPI_Ialltoallv.
  if (Session::launched()) exchange_ = SharedRowExchange::create(expert_, layout_.etp);
  if (!exchange_) exchange_ = std::make_unique<MpiExpertExchange>(&expert_, layout_.etp);
}

Context::~Context() = default;

}  // namespace trex::dist
