#include "trex/dist/shared_window.h"

#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "trex/dist/communicator_handle.h"
#include "trex/dist/request_wait.h"
#include "trex/dist/session.h"

namespace trex::dist {

struct SharedWindow::Handle {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Win win = MPI_WIN_NULL;
  ~Handle() {
    if (win != MPI_WIN_NULL) {
      MPI_Win_unlock_all(win);
      MPI_Win_free(&win);
    }
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
  }
};

namespace {

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI: ") + what + " failed");
}

}  // namespace

SharedWindow::SharedWindow() = default;
SharedWindow::~SharedWindow() {
  WatchdogScope scope("freeing the shared window");  // collective: a peer that died would hang it
  h_.reset();
}

std::unique_ptr<SharedWindow> SharedWindow::create(const Communicator& comm, int64_t bytes) {
  if (!comm.h_ || comm.size() == 1) return nullptr;
  if (const char* v = std::getenv("TREX_DIST_SHM"); v && std::strcmp(v, "0") == 0) return nullptr;
  std::unique_ptr<SharedWindow> w(new SharedWindow);
  w->h_ = std::make_unique<Handle>();
  Handle& h = *w->h_;
  // The members that share memory with this one, in comm's order (key = rank).
  check(MPI_Comm_split_type(comm.h_->comm, MPI_COMM_TYPE_SHARED, comm.rank(), MPI_INFO_NULL, &h.node),
        "MPI_Comm_split_type");
  int node_size = 0;
  MPI_Comm_size(h.node, &node_size);
  // Every member computes the same answer: the job is on one machine or it is not.
  if (node_size != comm.size()) return nullptr;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");  // each region in its own pages
  void* base = nullptr;
  const int rc = MPI_Win_allocate_shared(MPI_Aint(bytes), 1, info, h.node, &base, &h.win);
  MPI_Info_free(&info);
  check(rc, "MPI_Win_allocate_shared");
  // One passive epoch for the window's life, so that MPI_Win_sync may order the direct loads
  // and stores (MPI-3 unified model).
  check(MPI_Win_lock_all(MPI_MODE_NOCHECK, h.win), "MPI_Win_lock_all");
  // (Regions may differ in size: each member asked for its own.)
  w->regions_.resize(size_t(comm.size()));
  for (int q = 0; q < comm.size(); ++q) {
    MPI_Aint size = 0;
    int unit = 0;
    check(MPI_Win_shared_query(h.win, q, &size, &unit, &w->regions_[size_t(q)]), "MPI_Win_shared_query");
  }
  return w;
}

void SharedWindow::sync(const char* what) const {
  WatchdogScope scope(what);
  check(MPI_Win_sync(h_->win), "MPI_Win_sync");
  MPI_Request r;
  check(MPI_Ibarrier(h_->node, &r), "MPI_Ibarrier");
  wait_requests(1, &r);
  check(MPI_Win_sync(h_->win), "MPI_Win_sync");
}

}  // namespace trex::dist
