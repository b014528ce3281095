// The ranks of a corpus run under mpirun, as the corpus engine sees them: two collectives,
// nothing more. The engine (corpus_run.cc) builds blocks on every rank and sends each block's
// candidates to rank 0, which holds the one Deduplicator and admits them in global block order;
// its verdicts come back to every rank, and each rank writes its own blocks. The MPI
// implementation lives with the CLI (apps/trex/data_command.cc, over dist::Communicator), so
// ordata does not depend on the dist part.
//
// Every member calls every collective, in the same order.
#pragma once

#include <string>
#include <vector>

namespace trex::ordata {

class RankGroup {
 public:
  virtual ~RankGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every member's bytes to rank 0: there, element i is member i's; elsewhere, empty.
  virtual std::vector<std::string> gather(const std::string& mine) = 0;
  // Rank 0's bytes to every member (the others' argument is ignored).
  virtual std::string broadcast(const std::string& from_rank0) = 0;
  virtual void barrier() = 0;
};

}  // namespace trex::ordata
