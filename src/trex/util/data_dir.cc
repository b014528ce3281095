#include "trex/util/data_dir.h"

#include <cstdlib>
#include <filesystem>

namespace trex {

std::string data_dir() {
  const char* env = std::getenv(kDataDirEnv);
  if (env && *env) return env;
  return TREX_DEFAULT_DATA_DIR;
}

std::string find_data(const std::string& relative) {
  std::string p = data_dir() + "/" + relative;
  std::error_code ec;
  return std::filesystem::exists(p, ec) ? p : std::string();
}

const char* version() { return TREX_VERSION; }

}  // namespace trex
