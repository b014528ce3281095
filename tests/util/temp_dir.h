// A fresh folder under the system's temporary directory for one test, removed at the end, and
// the trex binary run with a generous hang guard (never a timing check).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "trex/util/subprocess.h"

namespace trex::test_util {

struct TempDir {
  std::string path;
  explicit TempDir(const std::string& tag) {
    path = (std::filesystem::temp_directory_path() / ("trex_" + tag + "_" + std::to_string(getpid()))).string();
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

#ifdef TREX_BINARY
inline ProcessResult run_trex(std::vector<std::string> args) {
  args.insert(args.begin(), TREX_BINARY);
  ProcessOptions o;
  o.timeout_s = 1800;  // a hang guard only
  return run_process(args, o);
}
#endif

}  // namespace trex::test_util
