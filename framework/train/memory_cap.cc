// DYNAMIX — the capped CPU allocator.
#include "framework/train/memory_cap.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace dynamix {
namespace {

class CappedCpuAllocator final : public c10::Allocator {
 public:
  explicit CappedCpuAllocator(c10::Allocator* inner) : inner_(inner) {}

  void set_cap(size_t bytes) { cap_.store(bytes); }
  size_t in_use() const { return in_use_.load(); }

  // LibTorch 1.x declares allocate() const and has no copy_data(); 2.x declares allocate()
  // non-const and copy_data() pure. Defining both forms (without `override`) implements
  // whichever the headers in use declare.
  c10::DataPtr allocate(size_t n) const { return const_cast<CappedCpuAllocator*>(this)->allocate(n); }
  c10::DataPtr allocate(size_t n) {
    const size_t before = in_use_.fetch_add(n);
    if (before + n > cap_.load()) {
      in_use_.fetch_sub(n);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "out of memory: tried to allocate ", n, " bytes with ",
                       before, " of ", cap_.load(),
                       " bytes in use (emulated device memory, hetero.memory_mb)");
    }
    void* data = nullptr;
    try {
      data = inner_->raw_allocate(n);
    } catch (...) {
      in_use_.fetch_sub(n);
      throw;
    }
    if (data) {
      std::lock_guard<std::mutex> lock(mu_);
      sizes_[data] = n;
    } else {
      in_use_.fetch_sub(n);
    }
    // Context == data: some LibTorch kernels use the raw interface (raw_deleter) on these.
    return c10::DataPtr(data, data, &release, c10::Device(c10::DeviceType::CPU));
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }

 private:
  static void release(void* data);

  c10::Allocator* inner_;
  std::atomic<size_t> cap_{~size_t{0}};
  std::atomic<size_t> in_use_{0};
  std::mutex mu_;
  std::unordered_map<void*, size_t> sizes_;
};

CappedCpuAllocator* g_capped = nullptr;  // installed once, lives as long as any tensor may

void CappedCpuAllocator::release(void* data) {
  if (!data) return;
  CappedCpuAllocator* self = g_capped;
  {
    std::lock_guard<std::mutex> lock(self->mu_);
    auto it = self->sizes_.find(data);
    if (it != self->sizes_.end()) {
      self->in_use_.fetch_sub(it->second);
      self->sizes_.erase(it);
    }
  }
  self->inner_->raw_deallocate(data);
}

}  // namespace

void install_cpu_memory_cap(size_t bytes) {
  if (!g_capped) {
    g_capped = new CappedCpuAllocator(c10::GetDefaultCPUAllocator());
    // Priority above the default (0) so LibTorch's CPU tensors come from here.
    c10::SetCPUAllocator(g_capped, /*priority=*/10);
  }
  g_capped->set_cap(bytes);
}

size_t capped_bytes_in_use() { return g_capped ? g_capped->in_use() : 0; }

}  // namespace dynamix
