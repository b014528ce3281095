// Shared helpers of the train tests: a temporary directory per test and small training texts
// taken from files already on the machine (never a download).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trex/util/atomic_file.h"

namespace trex::train::testing {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    path_ = fs::temp_directory_path() / ("trex-train-" + tag + "-" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string path(const std::string& name = "") const { return name.empty() ? path_.string() : (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = path(name);
    fs::create_directories(fs::path(p).parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  fs::path path_;
};

// The license texts every Debian system has.
inline std::string licenses_dir() { return "/usr/share/common-licenses"; }

inline std::vector<std::string> license_texts() {
  std::vector<std::string> out;
  for (const char* name : {"Apache-2.0", "BSD", "Artistic", "CC0-1.0"}) {
    std::string p = licenses_dir() + "/" + name;
    if (fs::exists(p)) out.push_back(read_file(p));
  }
  return out;
}

// A small SFT file in the OpenAI messages format, n conversations.
inline std::string sft_jsonl(int n) {
  std::string s;
  for (int i = 0; i < n; ++i)
    s += "{\"messages\": [{\"role\": \"system\", \"content\": \"You formulate optimization problems.\"}, "
         "{\"role\": \"user\", \"content\": \"Maximize profit for " + std::to_string(i + 2) +
         " products with limited machine hours.\"}, {\"role\": \"assistant\", \"content\": \"max " +
         std::to_string(3 * i + 1) + " x + 2 y subject to x + y <= " + std::to_string(10 + i) + "\"}]}\n";
  return s;
}

}  // namespace trex::train::testing
