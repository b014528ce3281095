// Text files that may be zstd-compressed (corpus shards are by default: *.jsonl.zst).
//
// read_text_file() reads a plain file or a ".zst" file alike, so every reader of corpora
// (trex data check, --against, a resumed run, trex train) takes both forms without a flag.
// A ".zst" file that is not a complete zstd stream, and a plain-named file that holds zstd
// data, are errors naming the file: never silently read as text.
#pragma once

#include <string>
#include <string_view>

namespace trex {

inline constexpr const char* kZstdSuffix = ".zst";

bool is_zstd_path(const std::string& path);
// Level 1 to 19; higher is smaller and slower.
std::string zstd_compress(std::string_view data, int level);
// Throws InputError(path, 0, ...) when `data` is not one or more complete zstd frames.
std::string zstd_decompress(std::string_view data, const std::string& path);
// The file's contents, decompressed when its name ends in ".zst". Throws InputError.
std::string read_text_file(const std::string& path);

}  // namespace trex
