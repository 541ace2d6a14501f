// Communicator: what data-parallel training needs from the processes it runs on (docs/distributed.md).
// One implementation per transport: a single process (this file; every collective is the identity), MPI
// over host buffers (runtime/dist/mpi_communicator.cpp, built when CMake finds MPI) and NCCL for device
// buffers (runtime/cuda/nccl_communicator.cpp, CUDA builds with NCCL).
//
// The collectives move bytes and floats; they never add. The sums over ranks are made by their callers in
// a fixed rank order (gather, then rank 0, 1, ...; runtime/dist/zero.cpp for the optimiser step), so a
// result is bitwise the same on every rank and on every run with the same number of ranks.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/dtype.h"

namespace gtpo::dist {

// Payload bytes this rank has sent to and received from other ranks, counted per peer (an all-gather of B
// bytes over N ranks sends (N-1)·B: what a ring or a pairwise exchange moves), headers left out.
struct Traffic {
  uint64_t sent = 0, received = 0;
};

// Ranges of a flat float buffer, one per rank: AT[r] is the first element, COUNT[r] how many.
struct Ranges {
  std::vector<int64_t> at, count;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's BYTES, indexed by rank; collective (every rank calls it, in the same order). WHAT names
  // the collective in a timeout or failure message.
  virtual std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& bytes, const char* what) = 0;
  // Whether exchange() reaches buffers on DEVICE (the host always; a GPU through NCCL).
  virtual bool reaches(Device device) const { return device == Device::cpu; }
  // Pairwise exchange of floats in buffers on WHERE (reaches(WHERE)): SEND's range TO[r] goes to rank r, and
  // rank r's range for this one lands in RECV's range FROM[r] (the counts must match what the peers send).
  virtual void exchange(const float* send, const Ranges& to, float* recv, const Ranges& from, Device where,
                        const char* what) = 0;
  // Every rank's BYTES on the writer (rank 0), indexed by rank; an empty list on the other ranks.
  virtual std::vector<std::vector<uint8_t>> gather_to_writer(const std::vector<uint8_t>& bytes,
                                                             const char* what) = 0;
  virtual Traffic traffic() const { return traffic_; }
  // Ends every rank of the job with MESSAGE (a rank that cannot continue must not leave the others waiting).
  [[noreturn]] virtual void abort(const std::string& message) = 0;
  bool writer() const { return rank() == 0; }  // the rank that writes logs, checkpoints and reports

 protected:
  Traffic traffic_;
};

// The one-process communicator: rank 0 of 1.
Communicator& single_process();

// The communicator of this process: MPI when launched by mpirun/srun with more than one rank (and built
// with MPI), else the single process. TIMEOUT_S bounds every collective (a dead or hung rank then ends
// the job with a clear error instead of a silent hang). Throws gtpo::Error when launched with several
// ranks by a binary built without MPI.
std::unique_ptr<Communicator> make_communicator(double timeout_s);

// A CUDA build with NCCL registers a wrapper here (runtime/cuda/nccl_communicator.cpp) that adds NCCL device
// all-reduces to a host communicator; make_device_communicator applies it (the runtime never names NCCL).
using DeviceCommunicatorFactory = std::unique_ptr<Communicator> (*)(std::unique_ptr<Communicator> host,
                                                                    double timeout_s);
void register_device_communicator(DeviceCommunicatorFactory factory);
// make_communicator, wrapped for device buffers when the model lives on a GPU (ON_DEVICE), there are several
// ranks and a factory is registered. A CPU run in a CUDA build never touches the driver.
std::unique_ptr<Communicator> make_device_communicator(double timeout_s, bool on_device);

// True on every rank when FLAG is true on any rank.
bool any_rank(Communicator& comm, bool flag, const char* what);
// The contiguous share [first, last) of COUNT work items that RANK of SIZE gets (sizes differ by <= 1).
struct Share {
  int64_t first = 0, last = 0;
};
Share share_of(int64_t count, int rank, int size);

// Little serialisation helpers for what the collectives carry (same binary on every rank: no byte order).
class ByteWriter {
 public:
  template <class T>
  void put(const T& v) {
    append(&v, sizeof(T));
  }
  template <class T>
  void put_vector(const std::vector<T>& v) {
    put<uint64_t>(v.size());
    append(v.data(), v.size() * sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    append(s.data(), s.size());
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  void append(const void* data, std::size_t n) {
    if (n == 0) return;
    const std::size_t at = bytes_.size();
    bytes_.resize(at + n);
    std::memcpy(bytes_.data() + at, data, n);
  }
  std::vector<uint8_t> bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  template <class T>
  T get() {
    T v;
    take(&v, sizeof(T));
    return v;
  }
  template <class T>
  std::vector<T> get_vector() {
    std::vector<T> v(get<uint64_t>());
    take(v.data(), v.size() * sizeof(T));
    return v;
  }
  std::string get_string() {
    std::string s(get<uint64_t>(), '\0');
    take(s.data(), s.size());
    return s;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  void take(void* out, std::size_t n);
  const std::vector<uint8_t>& bytes_;
  std::size_t at_ = 0;
};

}  // namespace gtpo::dist
