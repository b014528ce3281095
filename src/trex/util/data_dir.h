// Where the public benchmark data lives.
//
// Data in ../shared/data is read in place, never copied into the repository. The default is
// the shared/data folder beside the source tree; the environment variable TREX_DATA_DIR
// overrides it. Tests that need the data skip (visibly) when it is absent.
#pragma once

#include <string>

namespace trex {

inline constexpr const char* kDataDirEnv = "TREX_DATA_DIR";

// TREX_DATA_DIR if set and non-empty, else the build-time default.
std::string data_dir();

// data_dir() + "/" + relative, or "" when that path does not exist.
std::string find_data(const std::string& relative);

// trex's version string, e.g. "0.1.0".
const char* version();

}  // namespace trex
