// DYNAMIX — the Communicator seam: one interface, one implementation per backend (MPI, NCCL).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dynamix {

enum class DType { kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8 };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

// Collectives over this job's ranks. Buffers live in host memory for the MPI backend; the NCCL
// backend takes device memory. All calls are blocking from the caller's point of view.
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "mpi" | "nccl"

  // Whether collectives take device (GPU) buffers and reduce them in place on the device, ordered
  // on the device's streams (NCCL). Otherwise a caller holding device data stages it through host
  // memory. Ask this, never the backend's name or the concrete class (wrappers such as the
  // watchdog's WatchedCommunicator forward it).
  virtual bool reduces_device_buffers() const { return false; }

  // In-place element-wise SUM over ranks of `count` elements. Every backend sums every DType,
  // float16 / bfloat16 included (MPI: a user-defined op that widens to float, adds, and rounds
  // back to the 16-bit type, nearest even).
  virtual void allreduce_sum(void* buffer, size_t count, DType dtype) = 0;
  // In-place element-wise MAX over ranks.
  virtual void allreduce_max(void* buffer, size_t count, DType dtype) = 0;
  virtual void broadcast(void* buffer, size_t count, DType dtype, int root) = 0;
  // Gathers `bytes` from every rank into `recv` (size() * bytes) on `root`; recv may be null elsewhere.
  virtual void gather(const void* send, size_t bytes, void* recv, int root) = 0;
  // Gathers `bytes` from every rank into `recv` (size() * bytes) on all ranks.
  virtual void allgather(const void* send, size_t bytes, void* recv) = 0;
  virtual void barrier() = 0;

  // Stream-ordered device backends (NCCL) make later work on the caller's compute stream wait for
  // each device collective. While deferred, they do not; join_device_collectives() then orders
  // later compute work after every device collective issued so far (overlap: backward keeps
  // running while buckets are reduced). Host backends: no-ops.
  virtual void set_deferred_join(bool deferred) { (void)deferred; }
  virtual void join_device_collectives() {}
  // Device backends run collectives asynchronously and learn of some failures later (a lost peer):
  // empty while healthy, else what happened (after aborting). Thread-safe. Host backends: "".
  virtual std::string check_async_error() { return ""; }
  // Tears down pending device collectives so that no thread waits for ever on a lost peer; later
  // ones throw. Idempotent, thread-safe (the watchdog's hook). Host backends: nothing to do.
  virtual void abort() {}
};

}  // namespace dynamix
