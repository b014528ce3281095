#include "trex/dist/communicator.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "trex/dist/communicator_handle.h"
#include "trex/dist/request_wait.h"
#include "trex/dist/session.h"

namespace trex::dist {

namespace {

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI: ") + what + " failed");
}

// Counts in MPI are int: large transfers go in pieces of at most this many elements.
constexpr int64_t kPiece = int64_t(1) << 28;

}  // namespace

Communicator::Communicator() = default;
Communicator::~Communicator() = default;
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;

Communicator Communicator::world() {
  Communicator c;
  c.h_ = std::make_unique<Handle>();
  c.h_->comm = MPI_COMM_WORLD;
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &c.size_);
  return c;
}

Communicator Communicator::split(int color, int key) const {
  Communicator c;
  if (!h_) return c;
  c.h_ = std::make_unique<Handle>();
  check(MPI_Comm_split(h_->comm, color, key, &c.h_->comm), "MPI_Comm_split");
  c.h_->owned = true;
  MPI_Comm_rank(c.h_->comm, &c.rank_);
  MPI_Comm_size(c.h_->comm, &c.size_);
  return c;
}

void Communicator::barrier(const char* what) const {
  if (!h_) return;
  WatchdogScope w(what);
  MPI_Request r;
  check(MPI_Ibarrier(h_->comm, &r), "MPI_Ibarrier");
  wait_requests(1, &r);
}

template <class T>
static void allgather_pieces(MPI_Comm comm, int size, const T* send, int64_t n, T* recv, MPI_Datatype type) {
  WatchdogScope w("allgather");
  if (n <= kPiece) {
    MPI_Request r;
    check(MPI_Iallgather(send, int(n), type, recv, int(n), type, comm, &r), "MPI_Iallgather");
    wait_requests(1, &r);
    return;
  }
  std::vector<T> piece;
  for (int64_t off = 0; off < n; off += kPiece) {
    int64_t m = std::min(kPiece, n - off);
    piece.resize(size_t(m) * size_t(size));
    MPI_Request r;
    check(MPI_Iallgather(send + off, int(m), type, piece.data(), int(m), type, comm, &r), "MPI_Iallgather");
    wait_requests(1, &r);
    for (int i = 0; i < size; ++i)
      std::memcpy(recv + int64_t(i) * n + off, piece.data() + int64_t(i) * m, sizeof(T) * size_t(m));
  }
}

void Communicator::allgather(const float* send, int64_t n, float* recv) const {
  if (!h_) {
    std::memcpy(recv, send, sizeof(float) * size_t(n));
    return;
  }
  allgather_pieces(h_->comm, size_, send, n, recv, MPI_FLOAT);
}

void Communicator::allgather(const double* send, int64_t n, double* recv) const {
  if (!h_) {
    std::memcpy(recv, send, sizeof(double) * size_t(n));
    return;
  }
  allgather_pieces(h_->comm, size_, send, n, recv, MPI_DOUBLE);
}

void Communicator::allgather_bytes(const void* send, int64_t bytes, void* recv) const {
  if (!h_) {
    std::memcpy(recv, send, size_t(bytes));
    return;
  }
  allgather_pieces(h_->comm, size_, static_cast<const unsigned char*>(send), bytes, static_cast<unsigned char*>(recv),
                   MPI_BYTE);
}

std::vector<std::string> Communicator::gather_bytes(const std::string& send, int root) const {
  if (!h_) return {send};
  WatchdogScope w("gather");
  int64_t mine = int64_t(send.size());
  std::vector<int64_t> sizes(size_t(size_), 0);
  MPI_Request r;
  check(MPI_Igather(&mine, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, root, h_->comm, &r), "MPI_Igather");
  wait_requests(1, &r);
  std::vector<int> counts(size_t(size_), 0), displs(size_t(size_), 0);
  int64_t total = 0;
  if (rank_ == root)
    for (int i = 0; i < size_; ++i) {
      if (total + sizes[size_t(i)] > INT32_MAX)
        throw std::runtime_error("Communicator: gather too large for MPI's int counts");
      counts[size_t(i)] = int(sizes[size_t(i)]);
      displs[size_t(i)] = int(total);
      total += sizes[size_t(i)];
    }
  if (mine > INT32_MAX) throw std::runtime_error("Communicator: gather too large for MPI's int counts");
  std::string all(size_t(total), '\0');
  check(MPI_Igatherv(send.data(), int(mine), MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, root,
                     h_->comm, &r),
        "MPI_Igatherv");
  wait_requests(1, &r);
  std::vector<std::string> out;
  if (rank_ != root) return out;
  for (int i = 0; i < size_; ++i) out.push_back(all.substr(size_t(displs[size_t(i)]), size_t(counts[size_t(i)])));
  return out;
}

std::string Communicator::broadcast_bytes(const std::string& data, int root) const {
  if (!h_) return data;
  WatchdogScope w("broadcast");
  int64_t n = rank_ == root ? int64_t(data.size()) : 0;
  MPI_Request r;
  check(MPI_Ibcast(&n, 1, MPI_INT64_T, root, h_->comm, &r), "MPI_Ibcast");
  wait_requests(1, &r);
  if (n > INT32_MAX) throw std::runtime_error("Communicator: broadcast too large for MPI's int counts");
  std::string out = rank_ == root ? data : std::string(size_t(n), '\0');
  check(MPI_Ibcast(out.data(), int(n), MPI_BYTE, root, h_->comm, &r), "MPI_Ibcast");
  wait_requests(1, &r);
  return out;
}

void Communicator::allreduce_sum(int64_t* data, int64_t n) const {
  if (!h_ || n == 0) return;
  WatchdogScope w("allreduce");
  for (int64_t off = 0; off < n; off += kPiece) {
    MPI_Request r;
    check(MPI_Iallreduce(MPI_IN_PLACE, data + off, int(std::min(kPiece, n - off)), MPI_INT64_T, MPI_SUM, h_->comm, &r),
          "MPI_Iallreduce");
    wait_requests(1, &r);
  }
}

void Communicator::allreduce_sum(float* data, int64_t n) const {
  if (!h_ || n == 0) return;
  WatchdogScope w("allreduce");
  for (int64_t off = 0; off < n; off += kPiece) {
    MPI_Request r;
    check(MPI_Iallreduce(MPI_IN_PLACE, data + off, int(std::min(kPiece, n - off)), MPI_FLOAT, MPI_SUM, h_->comm, &r),
          "MPI_Iallreduce");
    wait_requests(1, &r);
  }
}

void Communicator::alltoall(const int64_t* send, int64_t* recv, int per) const {
  if (!h_) {
    std::memcpy(recv, send, sizeof(int64_t) * size_t(per));
    return;
  }
  WatchdogScope w("alltoall");
  MPI_Request r;
  check(MPI_Ialltoall(send, per, MPI_INT64_T, recv, per, MPI_INT64_T, h_->comm, &r), "MPI_Ialltoall");
  wait_requests(1, &r);
}

void Communicator::start_alltoallv(const float* send, const int64_t* send_rows, float* recv,
                                   const int64_t* recv_rows, int64_t width) {
  if (!h_) {
    std::memcpy(recv, send, sizeof(float) * size_t(send_rows[0] * width));
    return;
  }
  if (h_->pending != MPI_REQUEST_NULL) throw std::logic_error("Communicator: an exchange is already in flight");
  // Counts in rows of a contiguous `width`-float type, so that int counts reach far.
  if (h_->row_type != MPI_DATATYPE_NULL) MPI_Type_free(&h_->row_type);
  check(MPI_Type_contiguous(int(width), MPI_FLOAT, &h_->row_type), "MPI_Type_contiguous");
  MPI_Type_commit(&h_->row_type);
  h_->scounts.assign(size_t(size_), 0);
  h_->sdispls.assign(size_t(size_), 0);
  h_->rcounts.assign(size_t(size_), 0);
  h_->rdispls.assign(size_t(size_), 0);
  int64_t so = 0, ro = 0;
  for (int i = 0; i < size_; ++i) {
    if (send_rows[i] > INT32_MAX || recv_rows[i] > INT32_MAX || so > INT32_MAX || ro > INT32_MAX)
      throw std::runtime_error("Communicator: exchange too large for MPI's int counts");
    h_->scounts[size_t(i)] = int(send_rows[i]);
    h_->sdispls[size_t(i)] = int(so);
    h_->rcounts[size_t(i)] = int(recv_rows[i]);
    h_->rdispls[size_t(i)] = int(ro);
    so += send_rows[i];
    ro += recv_rows[i];
  }
  check(MPI_Ialltoallv(send, h_->scounts.data(), h_->sdispls.data(), h_->row_type, recv, h_->rcounts.data(),
                       h_->rdispls.data(), h_->row_type, h_->comm, &h_->pending),
        "MPI_Ialltoallv");
}

void Communicator::post_exchange(const float* send, const int64_t* send_counts, const int64_t* send_displs,
                                 float* recv, const int64_t* recv_counts, const int64_t* recv_displs) {
  if (!h_) {
    std::memcpy(recv + recv_displs[0], send + send_displs[0], sizeof(float) * size_t(send_counts[0]));
    return;
  }
  std::vector<int> a(size_t(4 * size_));
  for (int i = 0; i < size_; ++i) {
    for (int64_t v : {send_counts[i], send_displs[i], recv_counts[i], recv_displs[i]})
      if (v < 0 || v > INT32_MAX) throw std::runtime_error("Communicator: exchange too large for MPI's int counts");
    a[size_t(i)] = int(send_counts[i]);
    a[size_t(size_ + i)] = int(send_displs[i]);
    a[size_t(2 * size_ + i)] = int(recv_counts[i]);
    a[size_t(3 * size_ + i)] = int(recv_displs[i]);
  }
  h_->posted_arrays.push_back(std::move(a));
  int* p = h_->posted_arrays.back().data();
  h_->posted.push_back(MPI_REQUEST_NULL);
  check(MPI_Ialltoallv(send, p, p + size_, MPI_FLOAT, recv, p + 2 * size_, p + 3 * size_, MPI_FLOAT, h_->comm,
                       &h_->posted.back()),
        "MPI_Ialltoallv");
}

void Communicator::progress_exchanges() {
  if (!h_ || h_->posted.empty()) return;
  int done = 0;
  check(MPI_Testall(int(h_->posted.size()), h_->posted.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
}

int64_t Communicator::exchanges_done() {
  if (!h_) return std::numeric_limits<int64_t>::max();  // alone: each was a copy, done when posted
  size_t k = 0;
  for (; k < h_->posted.size(); ++k) {
    int done = 0;  // (a completed request is MPI_REQUEST_NULL, which tests as done)
    check(MPI_Test(&h_->posted[k], &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (!done) break;
  }
  return int64_t(k);
}

void Communicator::wait_exchanges() {
  if (!h_ || h_->posted.empty()) return;
  WatchdogScope w("gradient exchange");
  wait_requests(int(h_->posted.size()), h_->posted.data());
  h_->posted.clear();
  h_->posted_arrays.clear();
}

void Communicator::finish_alltoallv() {
  if (!h_ || h_->pending == MPI_REQUEST_NULL) return;
  WatchdogScope w("alltoallv");
  wait_requests(1, &h_->pending);
}

void Communicator::progress_alltoallv() {
  if (!h_ || h_->pending == MPI_REQUEST_NULL) return;
  int done = 0;
  check(MPI_Test(&h_->pending, &done, MPI_STATUS_IGNORE), "MPI_Test");
}

}  // namespace trex::dist
