// The caching allocator on a counting raw allocator: blocks are reused across nearby sizes, and the cache
// stays within the working set however many different shapes a run goes through (RL batches change shape
// every step, and an exact-size cache grew with the run's length).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <set>
#include <vector>

#include "runtime/caching_allocator.h"

using gtpo::CachingAllocator;

namespace {

struct CountingRaw {
  std::set<void*> live;
  size_t mallocs = 0;
  CachingAllocator make() {
    return CachingAllocator(
        [this](size_t n) {
          void* p = std::malloc(n);
          live.insert(p);
          mallocs++;
          return p;
        },
        [this](void* p) {
          REQUIRE(live.erase(p) == 1);
          std::free(p);
        });
  }
};

// One "step": a few activations whose sizes scale with a sequence length T, all freed at the end.
void step(CachingAllocator& a, size_t T) {
  std::vector<std::pair<void*, size_t>> blocks;
  for (size_t width : {64, 256, 1024, 4096})
    blocks.emplace_back(a.allocate(width * T * 4), width * T * 4);
  for (auto [p, n] : blocks) a.deallocate(p, n);
}

}  // namespace

TEST_CASE("allocator: a request reuses a cached block up to 25% larger, never a smaller one", "[allocator]") {
  CountingRaw raw;
  {
    CachingAllocator a = raw.make();
    void* big = a.allocate(10000);
    a.deallocate(big, 10000);
    void* p = a.allocate(9000);  // 10048 <= 9024 * 1.25: the cached block serves it
    CHECK(p == big);
    CHECK(raw.mallocs == 1);
    void* q = a.allocate(12000);  // nothing cached fits
    CHECK(raw.mallocs == 2);
    a.deallocate(p, 9000);
    void* r = a.allocate(6000);  // 10048 > 6016 * 1.25: too wasteful, a new block
    CHECK(r != big);
    CHECK(raw.mallocs == 3);
    a.deallocate(q, 12000);
    a.deallocate(r, 6000);
    CHECK(a.stats().bytes_in_use == 0);
  }
  CHECK(raw.live.empty());  // the destructor returned every cached block
}

TEST_CASE("allocator: the cache stays within the working set over a thousand step shapes", "[allocator]") {
  CountingRaw raw;
  CachingAllocator a = raw.make();
  // Sequence lengths wander between 20 and 120 tokens, as padded RL batches do.
  size_t max_cached = 0;
  uint64_t state = 12345;
  for (int i = 0; i < 1000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    step(a, 20 + (state >> 33) % 101);
    max_cached = std::max(max_cached, a.stats().bytes_cached);
    REQUIRE(a.stats().bytes_in_use == 0);
  }
  const gtpo::AllocatorStats s = a.stats();
  CHECK(s.high_water_bytes >= size_t{5440} * 120 * 4);
  CHECK(max_cached <= s.cache_bound_bytes());
  CHECK(s.released_blocks > 0);  // the bound was reached and enforced
  WARN("1000 wandering steps: " << raw.mallocs << " raw allocations for 4000 requests, " << s.cache_hits
                                << " cache hits, " << raw.live.size() << " blocks cached at the end");
  // Best fit still reuses most blocks.
  CHECK(s.cache_hits > 2000);
}

TEST_CASE("allocator: freeing an unknown pointer is an error, not a corrupted cache", "[allocator]") {
  CountingRaw raw;
  CachingAllocator a = raw.make();
  void* p = a.allocate(128);
  a.deallocate(p, 128);
  CHECK_THROWS_WITH(a.deallocate(p, 128), Catch::Contains("did not hand out"));
}
