// Memory that every member of a communicator reads and writes directly, when all of them run on
// one machine: an MPI-3 shared-memory window (MPI_Win_allocate_shared), one region per member.
//
// Why: on one machine a large exchange through messages (the step's gradient pieces, the ZeRO-1
// weights) is pipelined through the shared-memory transport in fragments, and every fragment
// needs the sender and the receiver running at the same moment. On a loaded machine with fewer
// cores than runnable threads the two ranks are seldom scheduled together, and such an exchange
// measured 1.8-2.8 s per v4-micro step (80-160 MB; bench/dist_compare.sh, docs/dist.md) where
// the copy alone takes tens of milliseconds. Through a window each rank writes its own region
// and reads the others' after one synchronisation: the ranks meet once, not once per fragment.
//
// Discipline (what makes the reads race-free): a member writes only its own region; sync() is a
// memory barrier plus MPI_Barrier, so after it every member sees every write made before it;
// a member rewrites its region only when every reader of the previous contents has finished,
// which its caller guarantees by another sync() or by a collective that every reader enters
// after reading (see dist::StepReducer).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trex/dist/communicator.h"

namespace trex::dist {

class SharedWindow {
 public:
  // `bytes` of shared memory for each member (collective over comm). Null when the members span
  // several machines, when comm is the process alone, or when TREX_DIST_SHM=0 (every member must
  // see the same value; mpirun gives local ranks its environment): the caller then exchanges
  // messages instead.
  static std::unique_ptr<SharedWindow> create(const Communicator& comm, int64_t bytes);
  ~SharedWindow();
  SharedWindow(const SharedWindow&) = delete;
  SharedWindow& operator=(const SharedWindow&) = delete;

  // Member q's region (q = its rank in comm). Write only your own.
  void* region(int q) const { return regions_[size_t(q)]; }

  // Every member's writes so far visible to all, every member past this point. Collective,
  // under the watchdog (`what` names the wait).
  void sync(const char* what) const;

 private:
  struct Handle;
  SharedWindow();
  std::unique_ptr<Handle> h_;
  std::vector<void*> regions_;
};

}  // namespace trex::dist
