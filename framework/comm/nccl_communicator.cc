// DYNAMIX — NCCL communicator.
#include "framework/comm/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <exception>

#include "framework/comm/cuda_check.h"
#include "framework/comm/mpi_check.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/core/error.h"

// NCCL calls on this communicator: the message carries ncclGetLastError, fatal errors abort.
#define DYNAMIX_NCCL_CALL(call)                                                             \
  do {                                                                                      \
    const ncclResult_t dynamix_nccl_rc_ = (call);                                           \
    if (dynamix_nccl_rc_ != ncclSuccess) fail(dynamix_nccl_rc_, #call, __FILE__, __LINE__); \
  } while (0)

// CUDA calls around a collective: a failure means this rank leaves its peers waiting, so abort.
#define DYNAMIX_COMM_CUDA(call)                                                                            \
  do {                                                                                                     \
    const cudaError_t dynamix_cuda_rc_ = (call);                                                           \
    if (dynamix_cuda_rc_ != cudaSuccess) {                                                                 \
      abort();                                                                                             \
      throw_call_error("CUDA", #call, cuda_error_string(dynamix_cuda_rc_) + "; NCCL communicator aborted", \
                       __FILE__, __LINE__);                                                                \
    }                                                                                                      \
  } while (0)

namespace dynamix {
namespace {

ncclDataType_t nccl_datatype(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return ncclFloat32;
    case DType::kFloat64:
      return ncclFloat64;
    case DType::kFloat16:
      return ncclFloat16;
    case DType::kBFloat16:
      return ncclBfloat16;
    case DType::kInt32:
      return ncclInt32;
    case DType::kInt64:
      return ncclInt64;
    case DType::kUInt8:
      return ncclUint8;
  }
  throw Error("NCCL backend: unknown dtype");
}

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  if (MPI_Get_processor_name(name, &len) != MPI_SUCCESS) return "?";
  return std::string(name, static_cast<size_t>(len));
}

}  // namespace

NcclCommunicator::NcclCommunicator(const MpiRuntime& runtime)
    : NcclCommunicator(MPI_COMM_WORLD, runtime.local_rank()) {}

NcclCommunicator::NcclCommunicator(MPI_Comm comm, int device_index) : host_(comm) {
  rank_ = host_.rank();
  size_ = host_.size();
  const std::string where = "rank " + std::to_string(rank_) + " (CUDA device " +
                            std::to_string(device_index) + " on " + host_name() + ")";

  // Each rank checks its own GPU; then all agree, so that no rank waits in ncclCommInitRank for
  // a peer that has already thrown.
  std::string problem;
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess) {
    problem = where + ": the nccl backend cannot use CUDA: cudaGetDeviceCount: " + cuda_error_string(e) +
              "; use backend: mpi on machines without GPUs";
  } else if (device_index < 0 || device_index >= devices) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    problem = where + ": NCCL needs one GPU per rank, but this node shows " + std::to_string(devices) +
              " CUDA device(s)" +
              (visible != nullptr ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : "") +
              "; start at most " + std::to_string(devices) +
              " ranks per node, or set backend: mpi (ranks may then share a GPU)";
  } else {
    device_ = device_index;
    e = cudaSetDevice(device_);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&done_, cudaEventDisableTiming);
    if (e != cudaSuccess) {
      problem =
          where + ": cannot set up CUDA device " + std::to_string(device_) + ": " + cuda_error_string(e);
    }
  }
  int first_bad = problem.empty() ? size_ : rank_;
  DYNAMIX_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &first_bad, 1, MPI_INT, MPI_MIN, host_.comm()));
  if (first_bad < size_) {
    release_cuda();
    throw Error(problem.empty() ? "NCCL communicator not created: rank " + std::to_string(first_bad) +
                                      " could not set up its GPU (see its message)"
                                : problem);
  }

  // Rank 0 makes the id; the status travels with it so that a failure ends every rank.
  struct {
    int result;
    ncclUniqueId id;
  } setup{};
  if (rank_ == 0) setup.result = ncclGetUniqueId(&setup.id);
  host_.broadcast(&setup, sizeof(setup), DType::kUInt8, 0);
  if (setup.result != ncclSuccess) {
    release_cuda();
    const auto rc = static_cast<ncclResult_t>(setup.result);
    throw_call_error("NCCL", "ncclGetUniqueId(&setup.id) on rank 0", nccl_error_string(rc), __FILE__,
                     __LINE__);
  }
  const ncclResult_t rc = ncclCommInitRank(&comm_, size_, setup.id, rank_);
  if (rc != ncclSuccess) {
    const std::string detail = nccl_error_string(rc);
    comm_ = nullptr;
    release_cuda();
    throw_call_error("NCCL", "ncclCommInitRank(&comm_, size_, setup.id, rank_)", detail, __FILE__, __LINE__);
  }
}

NcclCommunicator::~NcclCommunicator() {
  {
    std::lock_guard<std::mutex> lock(lifetime_mutex_);
    if (comm_ != nullptr && !aborted_.load()) {
      if (std::uncaught_exceptions() > 0) {
        aborted_.store(true);
        ncclCommAbort(comm_);
      } else {
        ncclCommDestroy(comm_);  // errors ignored: nothing useful to do in a destructor
      }
    }
  }
  release_cuda();
}

void NcclCommunicator::release_cuda() {
  if (done_ != nullptr) cudaEventDestroy(done_);
  if (ready_ != nullptr) cudaEventDestroy(ready_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);  // returns at once; pending work completes
  done_ = ready_ = nullptr;
  stream_ = nullptr;
}

void NcclCommunicator::abort() {
  std::lock_guard<std::mutex> lock(lifetime_mutex_);
  if (comm_ == nullptr || aborted_.exchange(true)) return;
  ncclCommAbort(comm_);  // result ignored: the communicator is unusable either way
}

std::string NcclCommunicator::check_async_error() {
  std::string message;
  {
    std::lock_guard<std::mutex> lock(lifetime_mutex_);
    if (aborted_.load()) return "NCCL communicator on rank " + std::to_string(rank_) + " was aborted";
    ncclResult_t async = ncclSuccess;
    const ncclResult_t rc = ncclCommGetAsyncError(comm_, &async);
    if (rc != ncclSuccess) async = rc;
    if (async == ncclSuccess || async == ncclInProgress) return {};
    message =
        "NCCL asynchronous error on rank " + std::to_string(rank_) + ": " + nccl_error_string(async, comm_);
  }
  abort();  // pending and later collectives must not wait on the lost peer
  return message;
}

void NcclCommunicator::fail(int result, const char* call, const char* file, int line) {
  const auto rc = static_cast<ncclResult_t>(result);
  std::string detail = nccl_error_string(rc, comm_);
  // Argument errors are caught before anything is enqueued; anything else may leave peers
  // waiting on this rank, so tear the communicator down first.
  if (rc != ncclInvalidArgument && rc != ncclInvalidUsage) {
    abort();
    detail += "; communicator aborted";
  }
  throw_call_error("NCCL", call, detail, file, line);
}

bool NcclCommunicator::is_device(const void* p) const {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();  // clear it: an unknown pointer is host memory to us
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

template <typename Call>
void NcclCommunicator::enqueue(Call&& call) {
  DYNAMIX_CHECK(!aborted_.load(), "NCCL communicator on rank " + std::to_string(rank_) +
                                      " was aborted; no further collectives are possible");
  CudaDeviceGuard guard(device_);
  DYNAMIX_COMM_CUDA(cudaEventRecord(ready_, compute_));
  DYNAMIX_COMM_CUDA(cudaStreamWaitEvent(stream_, ready_, 0));
  call();
  DYNAMIX_COMM_CUDA(cudaEventRecord(done_, stream_));
  if (!deferred_join_.load()) DYNAMIX_COMM_CUDA(cudaStreamWaitEvent(compute_, done_, 0));
}

void NcclCommunicator::join_device_collectives() {
  if (aborted_.load()) return;
  CudaDeviceGuard guard(device_);
  // done_ was last recorded after the latest collective; the comm stream runs them in order.
  DYNAMIX_COMM_CUDA(cudaStreamWaitEvent(compute_, done_, 0));
}

void NcclCommunicator::allreduce(void* buffer, size_t count, DType dtype, bool max) {
  if (!is_device(buffer)) {
    if (max) {
      host_.allreduce_max(buffer, count, dtype);
    } else {
      host_.allreduce_sum(buffer, count, dtype);
    }
    return;
  }
  if (count == 0) return;
  const ncclDataType_t type = nccl_datatype(dtype);
  const ncclRedOp_t op = max ? ncclMax : ncclSum;
  enqueue([&] { DYNAMIX_NCCL_CALL(ncclAllReduce(buffer, buffer, count, type, op, comm_, stream_)); });
}

void NcclCommunicator::allreduce_sum(void* buffer, size_t count, DType dtype) {
  allreduce(buffer, count, dtype, false);
}

void NcclCommunicator::allreduce_max(void* buffer, size_t count, DType dtype) {
  allreduce(buffer, count, dtype, true);
}

void NcclCommunicator::broadcast(void* buffer, size_t count, DType dtype, int root) {
  if (!is_device(buffer)) {
    host_.broadcast(buffer, count, dtype, root);
    return;
  }
  if (count == 0) return;
  const ncclDataType_t type = nccl_datatype(dtype);
  enqueue([&] { DYNAMIX_NCCL_CALL(ncclBroadcast(buffer, buffer, count, type, root, comm_, stream_)); });
}

void NcclCommunicator::allgather(const void* send, size_t bytes, void* recv) {
  const bool send_device = is_device(send), recv_device = is_device(recv);
  DYNAMIX_CHECK(send_device == recv_device,
                "NcclCommunicator::allgather on rank " + std::to_string(rank_) +
                    ": send and receive buffers must both be on the GPU or both on the host");
  if (!send_device) {
    host_.allgather(send, bytes, recv);
    return;
  }
  if (bytes == 0) return;
  enqueue([&] { DYNAMIX_NCCL_CALL(ncclAllGather(send, recv, bytes, ncclUint8, comm_, stream_)); });
}

void NcclCommunicator::gather(const void* send, size_t bytes, void* recv, int root) {
  DYNAMIX_CHECK(!is_device(send) && (recv == nullptr || !is_device(recv)),
                "NcclCommunicator::gather on rank " + std::to_string(rank_) +
                    " takes host buffers (it runs over MPI); copy device data to the host first");
  host_.gather(send, bytes, recv, root);
}

void NcclCommunicator::barrier() { host_.barrier(); }

}  // namespace dynamix
