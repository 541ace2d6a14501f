#include "runtime/caching_allocator.h"

#include <algorithm>

#include "runtime/error.h"

namespace gtpo {

size_t CachingAllocator::round_size(size_t bytes) {
  // 64-byte granularity below 1 MiB; above that, 1/8 of the next power of two bounds the waste at 12.5%.
  if (bytes == 0) return 64;
  if (bytes < (size_t{1} << 20)) return (bytes + 63) & ~size_t{63};
  size_t power = size_t{1} << 20;
  while (power < bytes) power <<= 1;
  const size_t step = power / 8;
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::allocate(size_t bytes) {
  const size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = free_blocks_.find(size);
  void* ptr = nullptr;
  if (it != free_blocks_.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
    stats_.cache_hits++;
    stats_.bytes_cached -= size;
  } else {
    ptr = raw_alloc_(size);
    if (!ptr) {
      // Free what we hold and try once more before giving up.
      for (auto& [block_size, blocks] : free_blocks_)
        for (void* p : blocks) raw_free_(p);
      free_blocks_.clear();
      stats_.bytes_cached = 0;
      ptr = raw_alloc_(size);
      GTPO_CHECK(ptr != nullptr, "out of memory: could not allocate ", size, " bytes");
    }
    stats_.system_allocations++;
  }
  stats_.bytes_in_use += size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return ptr;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

void CachingAllocator::deallocate(void* ptr, size_t bytes) {
  if (!ptr) return;
  const size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  free_blocks_[size].push_back(ptr);
  stats_.bytes_in_use -= size;
  stats_.bytes_cached += size;
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [size, blocks] : free_blocks_)
    for (void* p : blocks) raw_free_(p);
  free_blocks_.clear();
  stats_.bytes_cached = 0;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace gtpo
