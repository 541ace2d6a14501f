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
  void* ptr = nullptr;
  size_t block = size;
  auto it = free_blocks_.lower_bound(size);  // the exact size when cached, else the smallest larger one
  if (it != free_blocks_.end() && it->first <= largest_reusable(size)) {
    block = it->first;
    ptr = it->second.back().ptr;
    by_age_.erase(it->second.back().freed_at);
    it->second.pop_back();
    if (it->second.empty()) free_blocks_.erase(it);
    stats_.cache_hits++;
    stats_.bytes_cached -= block;
  } else {
    ptr = raw_alloc_(size);
    if (!ptr) {
      // Free what we hold and try once more before giving up.
      for (auto& [block_size, blocks] : free_blocks_)
        for (const CachedBlock& b : blocks) raw_free_(b.ptr);
      free_blocks_.clear();
      by_age_.clear();
      stats_.bytes_cached = 0;
      ptr = raw_alloc_(size);
      GTPO_CHECK(ptr != nullptr, "out of memory: could not allocate ", size, " bytes");
    }
    stats_.system_allocations++;
  }
  live_sizes_.emplace(ptr, block);
  stats_.bytes_in_use += block;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.high_water_bytes = std::max(stats_.high_water_bytes, stats_.bytes_in_use);
  return ptr;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

void CachingAllocator::deallocate(void* ptr, size_t bytes) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto live = live_sizes_.find(ptr);
  GTPO_CHECK(live != live_sizes_.end() && live->second >= round_size(bytes),
             "allocator: freeing a block it did not hand out (or twice)");
  const size_t block = live->second;
  live_sizes_.erase(live);
  free_blocks_[block].push_back({ptr, ++deallocations_});
  by_age_.emplace(deallocations_, block);
  stats_.bytes_in_use -= block;
  stats_.bytes_cached += block;
  release_over_bound();
}

void CachingAllocator::release_over_bound() {
  // The block cached longest ago goes first: a shape the run has moved away from. Each bucket is oldest
  // first, so the oldest block of all (by_age_'s first) is the front of its bucket.
  while (stats_.bytes_cached > stats_.cache_bound_bytes() && !by_age_.empty()) {
    const auto oldest = free_blocks_.find(by_age_.begin()->second);
    by_age_.erase(by_age_.begin());
    raw_free_(oldest->second.front().ptr);
    oldest->second.erase(oldest->second.begin());
    stats_.bytes_cached -= oldest->first;
    stats_.released_blocks++;
    if (oldest->second.empty()) free_blocks_.erase(oldest);
  }
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [size, blocks] : free_blocks_)
    for (const CachedBlock& b : blocks) raw_free_(b.ptr);
  free_blocks_.clear();
  by_age_.clear();
  stats_.bytes_cached = 0;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace gtpo
