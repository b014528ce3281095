// Closing every inherited descriptor in a freshly forked child, checked, with a fallback.
//
// A child forked from the evaluator inherits every descriptor of every thread: other items'
// pipes among them, which would then never see end-of-file. close_range (Linux >= 5.9) closes
// them in one call; where it fails, each descriptor below the open-file limit is closed one
// by one. Async-signal-safe: no allocation, raw system calls only, so it runs between fork
// and exec in a multi-threaded parent.
#pragma once

namespace trex::oreval {

// Closes every descriptor >= `lowest` except the `nkeep` listed in `keep`. Returns false when
// neither way worked (the caller then refuses to go on).
bool close_fds_from(int lowest, const int* keep, int nkeep);

}  // namespace trex::oreval
