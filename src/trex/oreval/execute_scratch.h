// Where each program's sandbox folder is made. The folder is made and removed once per program,
// and on ext4 that is an inode allocation each time (~0.6 ms of the evaluator per program,
// docs/eval.md Throughput); on a tmpfs it is a few microseconds. So a private tmpfs folder is
// preferred, and the system's temporary folder is the fallback.
#pragma once

#include <memory>
#include <string>

namespace trex::oreval {

struct ScratchPlaces {
  std::string tmpdir;               // $TMPDIR; "" when unset. Set, it is the user's choice, used as it is
  std::string runtime_dir;          // $XDG_RUNTIME_DIR; "" when unset
  std::string shm = "/dev/shm";     // a shared tmpfs, sticky and world-writable like /tmp
  std::string fallback;             // the system's temporary folder
  // The sandbox hands each program's folder to another user (the evaluator runs as root and the
  // program as nobody): that user must be able to pass through the root by name, which a
  // $XDG_RUNTIME_DIR (0700) never lets it do, so that one is not considered.
  bool other_user = false;
};

// The chosen root. `made`: a folder this process created for its run (under `shm`), removed
// (when empty) as this goes out of scope in the process that made it.
class ScratchRoot {
 public:
  ScratchRoot(std::string path, bool made);
  ScratchRoot(const ScratchRoot&) = delete;
  ScratchRoot& operator=(const ScratchRoot&) = delete;
  ~ScratchRoot();
  const std::string& path() const { return path_; }
  bool made() const { return made_; }

 private:
  std::string path_;
  bool made_ = false;
  long creator_ = 0;  // a forked child that exits must not remove its parent's folder
};

// In order: `tmpdir` when set (the user's choice: a tmpfs is memory, and a program's files there
// are bounded only per file and by its wall clock, docs/eval.md; TMPDIR=/tmp keeps them on disk);
// `runtime_dir` when it is set, not skipped (other_user) and on a tmpfs; else a new
// per-run folder under `shm` when that is a sticky world-writable tmpfs folder (0700, or 0711
// when other_user: traversable, never listable); else `fallback`. A choice that cannot be used
// is an error (std::runtime_error naming it and why), never a silent step to the next one:
// a set $XDG_RUNTIME_DIR that is not a folder of this user, closed to group and others and
// writable; a per-run folder that cannot be made.
std::unique_ptr<ScratchRoot> choose_scratch_root(const ScratchPlaces& places);

// This process's root, chosen once (the places from the environment) on the first call.
const std::string& scratch_root();

// A new folder for one program under `root` (mkdtemp "trex-eval-XXXXXX"): its path, or a
// std::runtime_error naming `root` and the reason.
std::string make_program_folder(const std::string& root);

}  // namespace trex::oreval
