// The MoE layers' exchange (model::ExpertExchange) through shared memory, when every rank of the
// expert group runs on one machine: each rank writes what it sends into its own region of a
// dist::SharedWindow, publishes it with a sequence number, and each receiver copies its rows
// straight out of the senders' regions once their numbers say the rows are there.
//
// Why (measured, docs/dist.md "The all-to-all inside a step"): through MPI_Ialltoallv an
// exchange completes only when BOTH ranks have run inside MPI after both posted. Open MPI's
// shared-memory transport hands a large message over by a header in the receiver's queue, and
// the receiver copies the data (single copy) and acknowledges it only inside its own MPI calls;
// the sender's request completes only when it, in turn, sees the acknowledgement in an MPI call.
// So the rank that posts last cannot finish until the rank that posted first wakes up in its
// wait and copies, and nothing moves while a rank computes (the shared expert between post and
// wait): in a 2-rank v4-micro step the last rank to post took ~1-7 ms per 2.7 MB exchange where
// the bare collective takes 0.7 ms. Here the sender's part is done when it has written its
// region: the last rank to arrive finds every peer's rows there and copies them at once, never
// waiting on a peer that is asleep or computing.
//
// Protocol. Every rank runs the same operations in the same order (the exchange is collective);
// operation n (a counts exchange or a rows exchange) uses slot n % 2 of every region, and a rank
// publishes n + 1 in its region's sequence word (release) when its slot n % 2 holds operation n's
// data. A reader waits until every peer has published n + 1 (acquire), even a peer that sends it
// nothing, then reads. Two slots suffice without any acknowledgement: a rank writes slot n % 2
// again at operation n + 2, after completing operation n + 1, for which it waited until every
// peer had published n + 2, which each peer does only after it finished reading operation n.
// Rows arrive bit for bit as sent (memcpy).
//
// One copy: the caller may pack its rows straight into its slot (send_slot, the next
// operation's slot, free by the argument above once the previous operation completed), and the
// receiver copies a peer's rows as soon as they are published, from progress_rows between the
// shared expert's products as well as at finish_rows.
//
// Space: the rows slots are sized at each counts exchange from every rank's counts (all ranks
// read all of them, so they agree) for the widest row the caller names; growing the window is
// collective and happens only there, when no rows are in flight.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trex/dist/communicator.h"
#include "trex/dist/shared_window.h"
#include "trex/model/expert_exchange.h"

namespace trex::dist {

class SharedRowExchange : public model::ExpertExchange {
 public:
  // Null when the group's ranks span several machines, when the group is one rank, or when
  // TREX_DIST_SHM=0 (then the exchange goes through MPI messages). Collective over comm.
  static std::unique_ptr<SharedRowExchange> create(const Communicator& comm, int shards);

  int ranks() const override { return ranks_; }
  int rank() const override { return rank_; }
  int shards() const override { return shards_; }
  void exchange_counts(const int64_t* send, int64_t* recv, int per, int64_t width) override;
  void start_rows(const float* send, const int64_t* send_rows, float* recv, const int64_t* recv_rows,
                  int64_t width) override;
  void finish_rows() override;
  // This rank's rows slot for the next rows exchange (one copy: the caller packs straight into
  // the memory the peers read), or null if the rows do not fit it.
  float* send_slot(const int64_t* send_rows, int64_t width) override;
  // Copies the rows of every peer that has published them by now (the receiver's copy runs
  // between the shared expert's products instead of at the wait).
  void progress_rows() override;

 private:
  SharedRowExchange(const Communicator& comm, int shards) : comm_(&comm), ranks_(comm.size()), rank_(comm.rank()), shards_(shards) {}
  // (Re)allocates the window for `per` counts per peer and `data` floats per rows slot, every
  // rank past its reads of the old one first. Collective.
  void resize(int64_t per, int64_t data);
  // Region q's parts (layout in the .cc).
  uint64_t* seq(int q) const;
  int64_t* counts(int q, int64_t slot) const;
  int64_t* displs(int q, int64_t slot) const;
  float* data(int q, int64_t slot) const;
  void publish(uint64_t n);
  // Copies out the rows of the exchange in flight from every peer that has published them and
  // was not copied yet; true when none is left.
  bool copy_arrived();
  bool published(int q, uint64_t n) const;

  const Communicator* comm_;
  int ranks_, rank_, shards_;
  std::unique_ptr<SharedWindow> window_;
  int64_t per_cap_ = 0, data_cap_ = 0;  // counts per peer, floats per rows slot
  uint64_t ops_ = 0;                    // operations run so far (the next one's n)
  // The rows exchange in flight.
  bool pending_ = false;
  float* recv_ = nullptr;
  int64_t width_ = 0;
  std::vector<int64_t> recv_rows_, recv_displs_;
  std::vector<char> done_;  // peers whose rows are copied
  int left_ = 0;            // peers whose rows are not
};

}  // namespace trex::dist
