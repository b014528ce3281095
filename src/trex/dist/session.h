// The process's MPI session: initialised when the process was started by mpirun (Open MPI sets
// OMPI_COMM_WORLD_SIZE), left alone otherwise, so `trex train` without mpirun stays one plain
// process with no MPI start-up at all.
//
// The watchdog: a thread that ends the process (exit code 3, one line on stderr naming the rank
// and the collective) when one collective has waited longer than the timeout. A peer that dies
// is noticed by mpirun, which ends the others; a peer that stalls (a hang, a stopped process) is
// noticed here. The timeout must exceed the longest compute between two collectives, a
// checkpoint write on rank 0 included.
#pragma once

#include <string>

namespace trex::dist {

class Session {
 public:
  // Initialises MPI when launched by mpirun. Only one Session per process.
  Session();
  ~Session();  // MPI_Finalize (when initialised)
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // True when this process was started by mpirun (checked from the environment; usable before
  // a Session exists, for instance to pick thread counts).
  static bool launched();
  // Ranks of the job on this machine (1 without mpirun).
  static int local_ranks();

  int rank() const { return rank_; }
  int world() const { return world_; }

  // Watchdog timeout in seconds (default 600, or TREX_DIST_TIMEOUT).
  void set_timeout(double seconds);
  double timeout() const;

  // Ends every rank of the job now: prints the message (prefixed with the rank) and aborts.
  [[noreturn]] void abort(const std::string& message, int code) const;

 private:
  int rank_ = 0, world_ = 1;
  bool initialised_ = false;
};

// Marks a blocking wait for the watchdog (used by Communicator).
class WatchdogScope {
 public:
  explicit WatchdogScope(const char* what);
  ~WatchdogScope();
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;
};

}  // namespace trex::dist
