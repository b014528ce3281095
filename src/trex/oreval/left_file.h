// Reading a file that a sandboxed program left in its folder, without trusting it.
//
// The program owns its folder and can leave anything under a name the evaluator reads: a
// symbolic link to /etc/shadow, a FIFO that never delivers, a device, a socket, a hard link to
// someone else's file, a file of many gigabytes. The evaluator (often root) opens the name
// relative to the folder's descriptor with O_NOFOLLOW | O_NONBLOCK, checks with fstat that it
// is a regular file with one link and within the size cap, and only then reads it; anything
// else is refused before a byte is read, with a message naming the file.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

namespace trex::oreval {

// "NAME: is a symbolic link; not read" and the like. Its message never holds the file's bytes.
class LeftFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The contents of `name` in the folder `dir_fd`, or nothing when no such entry exists.
// Throws LeftFileError when the entry is not a plain regular file or exceeds `max_bytes`.
std::optional<std::string> read_left_file(int dir_fd, const std::string& name, size_t max_bytes);

}  // namespace trex::oreval
