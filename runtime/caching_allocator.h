// A cache of freed blocks in front of a raw allocator, so that a steady training loop reuses blocks
// instead of calling malloc/cudaMalloc each step, with its size bounded: RL batches change shape every step
// (the padded response length varies), and a cache keyed by exact size kept one set of blocks per shape ever
// seen, so resident memory grew with the run's length.
//   - A request takes a cached block of its own rounded size when there is one (a steady loop reuses its
//     blocks exactly), else the smallest cached block with at most 25% to spare (best fit), so shapes a few
//     tokens apart share blocks.
//   - The cached bytes never exceed twice the most bytes ever in use at once (the working set): freeing past
//     that returns the cached blocks unused for longest to the raw allocator. In-use plus cached memory is
//     thus at most three working sets, whatever the run's length.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace gtpo {

struct AllocatorStats {
  uint64_t system_allocations = 0;  // calls that reached the raw allocator
  uint64_t cache_hits = 0;
  size_t bytes_in_use = 0;
  size_t bytes_cached = 0;
  size_t peak_bytes_in_use = 0;   // since the last reset_peak()
  size_t high_water_bytes = 0;    // the most ever in use at once: the bound on bytes_cached
  uint64_t released_blocks = 0;   // cached blocks returned to the raw allocator to keep within the bound
  size_t cache_bound_bytes() const { return 2 * high_water_bytes; }
};

class CachingAllocator {
 public:
  using RawAlloc = std::function<void*(size_t)>;
  using RawFree = std::function<void(void*)>;

  CachingAllocator(RawAlloc raw_alloc, RawFree raw_free) : raw_alloc_(std::move(raw_alloc)), raw_free_(std::move(raw_free)) {}
  ~CachingAllocator() { release_cached(); }

  void* allocate(size_t bytes);
  // BYTES is what was asked of allocate (the block's own size is remembered; BYTES only checks the pairing).
  void deallocate(void* ptr, size_t bytes);
  // Returns every cached block to the raw allocator.
  void release_cached();
  AllocatorStats stats() const;
  // Starts a new peak from what is in use now, so a phase's peak can be measured on its own.
  void reset_peak();

  // Block sizes are rounded so that similar requests share a bucket.
  static size_t round_size(size_t bytes);
  // A cached block of this many bytes serves a rounded request of SIZE when it is no more than 25% larger.
  static size_t largest_reusable(size_t size) { return size + size / 4; }

 private:
  void release_over_bound();  // mutex_ held

  RawAlloc raw_alloc_;
  RawFree raw_free_;
  mutable std::mutex mutex_;
  struct CachedBlock {
    void* ptr;
    uint64_t freed_at;  // deallocation count when it was cached: the oldest go first
  };
  // Block size -> cached blocks of that size, oldest first (reuse takes the newest, from the back).
  std::map<size_t, std::vector<CachedBlock>> free_blocks_;
  std::map<uint64_t, size_t> by_age_;  // every cached block's freed_at -> its size, oldest first
  uint64_t deallocations_ = 0;
  std::unordered_map<void*, size_t> live_sizes_;      // block -> its size, while in use
  AllocatorStats stats_;
};

}  // namespace gtpo
