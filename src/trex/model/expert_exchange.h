// What an MoE layer needs from expert parallelism, without knowing how it is done (the dist part
// implements it over MPI; the model never includes mpi.h).
//
// The routed experts are split in contiguous blocks over the ranks() / shards() expert-parallel
// positions of one group, and each expert's width over shards() expert-tensor-parallel peers:
// peer p holds experts [b E / B, (b + 1) E / B) with b = p / shards(), B = ranks() / shards(),
// and of each the slice [j f / shards(), (j + 1) f / shards()) of the intermediate width, with
// j = p % shards() (W1 and W3 by rows, W2 by columns). Every peer runs the same layers in the
// same order, so each call below is matched by the same call on every peer (collective).
//
// Rows travel grouped by peer: send holds send_rows[0] rows for peer 0, then send_rows[1] rows for
// peer 1, ...; recv receives recv_rows[0] rows from peer 0, then from peer 1, .... A row is
// `width` floats. Rows arrive bit for bit as sent.
#pragma once

#include <cstdint>

namespace trex::model {

class ExpertExchange {
 public:
  virtual ~ExpertExchange() = default;
  virtual int ranks() const = 0;  // peers in the expert-parallel group (>= 1)
  virtual int rank() const = 0;   // this peer's index in it
  virtual int shards() const { return 1; }  // expert-tensor-parallel peers per expert (ETP)

  // send [ranks() * per] -> recv [ranks() * per]: block p of send goes to peer p, block p of
  // recv came from peer p. Each block's sum is the rows that the rows exchanges using these
  // counts move (either way); `width` is the widest of their rows (floats), so that an exchange
  // through shared memory can size itself here (dist/shared_row_exchange.h).
  virtual void exchange_counts(const int64_t* send, int64_t* recv, int per, int64_t width) = 0;

  // Starts sending rows as described above; the buffers must stay untouched until
  // finish_rows(). One exchange is in flight at a time. Work done between the two calls
  // (the shared expert) overlaps the transfer.
  virtual void start_rows(const float* send, const int64_t* send_rows, float* recv, const int64_t* recv_rows,
                          int64_t width) = 0;
  virtual void finish_rows() = 0;
  // Where the caller may write the rows of its next start_rows (laid out as `send` there, for
  // these send_rows at this width) so that the exchange need not copy them again: a transport
  // whose peers read the sender's memory (dist/shared_row_exchange.h) hands out that memory.
  // Null when it has none (the caller packs into its own buffer). Valid until that
  // start_rows, which must then be given this pointer as `send`; called with no exchange in
  // flight.
  virtual float* send_slot(const int64_t* /*send_rows*/, int64_t /*width*/) { return nullptr; }
  // Called between pieces of the work that overlaps a transfer (the shared expert's products):
  // moves the exchange in flight along where the transport needs this rank's help to do so
  // (MPI's non-blocking collectives advance only inside MPI calls). Changes no result.
  virtual void progress_rows() {}
};

}  // namespace trex::model
