// Publishing several files at once, each whole or not at all (util/atomic_file.h publishes one).
//
// write_files_atomic writes every (path, contents) to a temporary in its directory, fsyncs
// each and then renames each over its path: the same durability as a write_file_atomic call
// per file (every file's data on disk before its rename). The write-back of every temporary
// is started before the first fsync, so a journalling file system (ext4) commits their blocks
// in one transaction and the later fsyncs find theirs committed, instead of one journal commit
// (and one wait behind everyone else's data) per file. A failure before the renames publishes
// none of the files and removes every temporary; a failed rename leaves the files before it in
// place (as a call per file would) and removes the rest. Failures throw IoError as
// write_file_atomic does ("PATH: what failed: why").
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace trex {

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace trex
