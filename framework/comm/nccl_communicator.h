// DYNAMIX — Communicator over NCCL: one GPU per rank (device = node-local rank).
//
// Device buffers go through NCCL on a dedicated non-blocking stream, ordered after the caller's
// compute stream by an event, and the compute stream then waits for the collective's done event:
// kernels queued on the compute stream afterwards (unpack, optimizer) see the result, yet the
// host returns at once (unlike MpiCommunicator, device calls do not block the host; synchronize
// the compute stream before reading a result on the host). Host buffers (pageable or pinned)
// and gather/barrier go to an MpiCommunicator over the same ranks: the trainer's small host
// collectives (step exchange, plan broadcast) stay on MPI. Every rank must pass the same kind
// of buffer to a given collective.
#pragma once

#include <driver_types.h>  // cudaStream_t, cudaEvent_t (C declarations only)
#include <mpi.h>

#include <atomic>
#include <mutex>
#include <string>

#include "framework/comm/communicator.h"
#include "framework/comm/mpi_communicator.h"

struct ncclComm;  // = ncclComm_t in <nccl.h>; keeps NCCL's header out of includers

namespace dynamix {

class MpiRuntime;

class NcclCommunicator final : public Communicator {
 public:
  // Collective over `comm`: selects CUDA device `device_index` (the trainer's choice: the node-local
  // rank modulo the visible GPUs, so 0 everywhere under per-task GPU binding), rank 0 makes the
  // ncclUniqueId and broadcasts it over MPI, then ncclCommInitRank. If any rank cannot get its GPU,
  // every rank throws dynamix::Error (that rank's message names the device count and suggests
  // backend: mpi).
  NcclCommunicator(MPI_Comm comm, int device_index);
  // MPI_COMM_WORLD, device = runtime.local_rank().
  explicit NcclCommunicator(const MpiRuntime& runtime);
  // ncclCommDestroy unless aborted; while an exception unwinds, aborts instead (a pending
  // collective whose peers are gone would make destroy wait for ever).
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  bool reduces_device_buffers() const override { return true; }

  void allreduce_sum(void* buffer, size_t count, DType dtype) override;
  void allreduce_max(void* buffer, size_t count, DType dtype) override;
  void broadcast(void* buffer, size_t count, DType dtype, int root) override;
  void allgather(const void* send, size_t bytes, void* recv) override;
  // Host buffers only (MPI).
  void gather(const void* send, size_t bytes, void* recv, int root) override;
  void barrier() override;
  // Thread-safe (the overlap's comm thread issues collectives while the main thread sets it).
  void set_deferred_join(bool deferred) override { deferred_join_.store(deferred); }
  void join_device_collectives() override;

  // The stream the caller's kernels run on (default: the legacy default stream 0, LibTorch's
  // default). Must belong to device(); device collectives order themselves against it.
  void set_compute_stream(cudaStream_t stream) { compute_ = stream; }
  cudaStream_t compute_stream() const { return compute_; }
  cudaStream_t comm_stream() const { return stream_; }
  int device() const { return device_; }

  // Empty while the communicator is healthy; otherwise NCCL's description of the asynchronous
  // error (a peer lost, a network failure, ...), after aborting the communicator. Thread-safe.
  std::string check_async_error() override;
  // ncclCommAbort: pending collectives are torn down, later ones throw. Idempotent and safe from
  // another thread (the watchdog's on_abort hook).
  void abort() override;
  bool aborted() const { return aborted_.load(); }

  // The MPI communicator used for host buffers.
  MpiCommunicator& host() { return host_; }

 private:
  bool is_device(const void* p) const;
  template <typename Call>
  void enqueue(Call&& call);
  void allreduce(void* buffer, size_t count, DType dtype, bool max);
  // Aborts on a fatal result (not on an invalid argument), then throws with the call text.
  [[noreturn]] void fail(int result, const char* call, const char* file, int line);
  void release_cuda();

  MpiCommunicator host_;
  int rank_ = 0;
  int size_ = 1;
  int device_ = -1;
  ncclComm* comm_ = nullptr;
  cudaStream_t stream_ = nullptr;   // the comm stream (non-blocking)
  cudaStream_t compute_ = nullptr;  // 0 = legacy default stream
  cudaEvent_t ready_ = nullptr;     // recorded on compute_, waited on by stream_
  cudaEvent_t done_ = nullptr;      // recorded on stream_, waited on by compute_
  std::atomic<bool> aborted_{false};
  std::atomic<bool> deferred_join_{false};
  std::mutex lifetime_mutex_;  // serializes abort, destroy and the async-error query
};

}  // namespace dynamix
