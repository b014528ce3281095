// Publishing files whole or not at all.
//
// write_file_atomic writes to "PATH.tmp.PID.N" in the same directory, flushes and fsyncs it,
// then renames it over PATH, so a reader (or a crash) never sees a half-written output.
// On any failure the temporary is removed and an IoError ("PATH: what failed: why",
// util/io_error.h) is thrown: the system refused the write, the input was fine.
#pragma once

#include <string>
#include <string_view>

namespace trex {

void write_file_atomic(const std::string& path, std::string_view contents);

// Reads a whole file. Throws InputError naming the path when it cannot be opened or read,
// or when it is larger than max_bytes.
std::string read_file(const std::string& path, size_t max_bytes = size_t(1) << 32);

}  // namespace trex
