// Running independent work items on a few threads.
#ifndef TAILGUARD_COMMON_PARALLEL_H_
#define TAILGUARD_COMMON_PARALLEL_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace tailguard {

// Runs work(i) for every i in [0, n) on up to `threads` threads (the caller's included); each
// i runs once. Returns when all are done.
template <typename F>
void ParallelFor(size_t n, int threads, F work) {
  // Relaxed: each index is claimed once; results are published by the joins.
  std::atomic<size_t> next{0};
  auto loop = [&] {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) work(i);
  };
  std::vector<std::thread> pool;
  const int extra = std::min<int>(std::max(threads, 1), static_cast<int>(n)) - 1;
  for (int t = 0; t < extra; ++t) pool.emplace_back(loop);
  loop();
  for (std::thread& t : pool) t.join();
}

}  // namespace tailguard

#endif  // TAILGUARD_COMMON_PARALLEL_H_
