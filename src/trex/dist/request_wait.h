// Waiting for MPI requests without holding a core: every blocking wait of the dist part goes
// through here (mpi.h: for the dist part's .cc files only).
//
// Why: Open MPI waits by polling in a loop (MPI_Wait, and inside every blocking collective). On
// a machine with more runnable threads than cores (2 cores here, shared with builds and other
// jobs) a polling rank stays runnable, so the scheduler keeps giving it slices of a core it
// only spins on, charges it for them, and the peer it waits for, which has the actual work,
// queues behind it and every other job. Here a rank tests its requests, and while they are not
// done it sleeps (20 us, doubling to 200 us) between tests: it leaves the core, and when it
// wakes it has used little CPU and gets scheduled promptly. The cost is at most ~200 us of
// extra latency per wait. (`--mca mpi_yield_when_idle 1` only yields inside the loop: the rank
// stays runnable; measured slower, docs/dist.md.) TREX_DIST_SPIN=1 restores MPI's own waiting,
// for comparisons (bench/dist_compare.sh SPIN=1).
#pragma once

#include <mpi.h>

#include <functional>

namespace trex::dist {

// Completes the n requests (MPI_Waitall's effect), sleeping between tests. Throws on an MPI error.
void wait_requests(int n, MPI_Request* requests);

// Returns once ready() is true, testing it with the same sleeps between tests (without them
// under TREX_DIST_SPIN=1): for waits on flags in shared memory (dist/shared_row_exchange.h).
void wait_until(const std::function<bool()>& ready);

}  // namespace trex::dist
