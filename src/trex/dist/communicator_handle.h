// Communicator's MPI state, for the dist part's own .cc files only (it includes mpi.h, which
// no header outside them may).
#pragma once

#include <mpi.h>

#include <vector>

#include "trex/dist/communicator.h"

namespace trex::dist {

struct Communicator::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;
  MPI_Request pending = MPI_REQUEST_NULL;
  MPI_Datatype row_type = MPI_DATATYPE_NULL;  // `width` floats, for the exchange in flight
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  // post_exchange: the requests in flight and their count arrays (alive until completion).
  std::vector<MPI_Request> posted;
  std::vector<std::vector<int>> posted_arrays;
  ~Handle() {
    if (row_type != MPI_DATATYPE_NULL) MPI_Type_free(&row_type);
    if (owned && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

}  // namespace trex::dist
