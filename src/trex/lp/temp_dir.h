// A private temporary directory for the files a helper process reads or writes (glpsol's
// input and output), removed with everything in it when the object goes.
#pragma once

#include <stdlib.h>  // mkdtemp

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace trex::lp {

class TempDir {
 public:
  // `prefix` names the directory ("trex-glpk" gives $TMPDIR/trex-glpk-XXXXXX).
  explicit TempDir(const std::string& prefix) {
    const char* env = std::getenv("TMPDIR");
    for (std::string base : {std::string(env && *env ? env : "/tmp"), std::string("/tmp")}) {
      std::string templ = base + "/" + prefix + "-XXXXXX";
      if (::mkdtemp(templ.data())) {
        path_ = templ;
        return;
      }
    }
    throw std::runtime_error("cannot create a temporary directory under $TMPDIR or /tmp");
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace trex::lp
