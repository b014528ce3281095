// A group of ranks and the collectives trex uses, over MPI (mpi.h stays in the .cc). A
// default-constructed Communicator is the process alone (size 1): every collective is then a
// local copy, so code written against this class runs unchanged without mpirun.
//
// Every collective is blocking unless named start_/finish_, is called by every member in the
// same order, and runs under the watchdog (session.h): a call that waits longer than the
// session's timeout ends the process with a message naming the collective, since a peer that
// died or stalled would otherwise hang the run.
//
// Determinism: allgather and alltoall move bytes; no collective here adds floating-point values
// (trex adds them itself, in a fixed order); allreduce_sum is over integers, exact.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trex::dist {

class Communicator {
 public:
  Communicator();  // the process alone
  ~Communicator();
  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;

  // MPI_COMM_WORLD. REQUIRES: Session::launched() (MPI initialised).
  static Communicator world();

  int rank() const { return rank_; }
  int size() const { return size_; }

  // The members with the same color form one new communicator, ordered by key. Collective.
  Communicator split(int color, int key) const;

  void barrier(const char* what) const;
  // send [n] from every member -> recv [size() * n], member i's at i n.
  void allgather(const float* send, int64_t n, float* recv) const;
  void allgather(const double* send, int64_t n, double* recv) const;
  // The same for raw bytes (bf16 weights).
  void allgather_bytes(const void* send, int64_t bytes, void* recv) const;
  // Bytes of any length from every member to `root` (MPI_Igatherv): at root, element i is
  // member i's bytes; elsewhere, empty. (The corpus engine's candidates, ordata.)
  std::vector<std::string> gather_bytes(const std::string& send, int root) const;
  // root's bytes to every member (MPI_Ibcast); the other members' `data` is ignored.
  std::string broadcast_bytes(const std::string& data, int root) const;
  // data [n] := the element-wise sum over members (exact: integers).
  void allreduce_sum(int64_t* data, int64_t n) const;
  // data [n] := the element-wise float sum over members, in whatever order MPI's algorithm
  // takes (not used by training, whose sums keep a fixed order; bench/dist_bench times it).
  void allreduce_sum(float* data, int64_t n) const;
  // send [size() * per] -> recv [size() * per]: block i of send goes to member i.
  void alltoall(const int64_t* send, int64_t* recv, int per) const;
  // Rows of `width` floats grouped by member (send_rows[i] rows to member i, recv_rows[i] from
  // it), non-blocking: the buffers stay untouched until finish_alltoallv().
  void start_alltoallv(const float* send, const int64_t* send_rows, float* recv, const int64_t* recv_rows,
                       int64_t width);
  void finish_alltoallv();
  // Moves the exchange in flight along (MPI_Test), without waiting.
  void progress_alltoallv();

  // Any number of non-blocking exchanges of floats (MPI_Ialltoallv), each with per-member counts
  // and displacements in floats (send_displs into send, recv_displs into recv): the buffers stay
  // untouched until wait_exchanges(). Open MPI moves non-blocking collectives along only inside
  // MPI calls, so progress_exchanges() (MPI_Testall) is called between pieces of other work.
  void post_exchange(const float* send, const int64_t* send_counts, const int64_t* send_displs, float* recv,
                     const int64_t* recv_counts, const int64_t* recv_displs);
  void progress_exchanges();
  // How many of the exchanges posted since the last wait_exchanges(), counted from the first,
  // have completed (their recv buffers are filled), without waiting.
  int64_t exchanges_done();
  void wait_exchanges();

 private:
  friend class SharedWindow;  // shared_window.h: builds its window over this communicator
  struct Handle;
  std::unique_ptr<Handle> h_;  // null: the process alone
  int rank_ = 0, size_ = 1;
};

}  // namespace trex::dist
