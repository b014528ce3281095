// The system refusing an operation on a file in the middle of a run: a disk that filled up, a
// failing device, a file size limit. Unlike an InputError (util/error.h) the input was fine; the
// command line prints the one line ("trex: error: FILE: what failed: why") and exits with 1.
// Its own header so that the few places that raise or catch it are all that include it.
#pragma once

#include <stdexcept>

namespace trex {

// The message names the file (and the offset, for a transfer).
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace trex
