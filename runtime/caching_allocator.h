// A size-bucketed cache in front of a raw allocator, so that a steady training loop reuses blocks
// instead of calling malloc/cudaMalloc each step.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

namespace gtpo {

struct AllocatorStats {
  uint64_t system_allocations = 0;  // calls that reached the raw allocator
  uint64_t cache_hits = 0;
  size_t bytes_in_use = 0;
  size_t bytes_cached = 0;
  size_t peak_bytes_in_use = 0;
};

class CachingAllocator {
 public:
  using RawAlloc = std::function<void*(size_t)>;
  using RawFree = std::function<void(void*)>;

  CachingAllocator(RawAlloc raw_alloc, RawFree raw_free) : raw_alloc_(std::move(raw_alloc)), raw_free_(std::move(raw_free)) {}
  ~CachingAllocator() { release_cached(); }

  void* allocate(size_t bytes);
  void deallocate(void* ptr, size_t bytes);
  // Returns every cached block to the raw allocator.
  void release_cached();
  AllocatorStats stats() const;
  // Starts a new peak from what is in use now, so a phase's peak can be measured on its own.
  void reset_peak();

  // Block sizes are rounded so that similar requests share a bucket.
  static size_t round_size(size_t bytes);

 private:
  RawAlloc raw_alloc_;
  RawFree raw_free_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_blocks_;
  AllocatorStats stats_;
};

}  // namespace gtpo
