// Recorder: per-thread writers, collection by difference, exiting threads, and concurrent
// writers with a collecting reader (this test is also run under ThreadSanitizer).
#include "tailguard/recorder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

namespace tailguard {
namespace {

TEST(RecorderTest, CollectReturnsWhatWasRecordedSinceTheLastCollect) {
  Recorder r;
  for (uint64_t v : {100u, 200u, 300u}) EXPECT_TRUE(r.Record(v));
  Histogram first = r.Collect();
  EXPECT_EQ(first.count(), 3u);
  EXPECT_EQ(first.sum(), 603.0);  // bucket midpoints: 100, 201, 302
  // Collected intervals are rebuilt from bucket counts: values come back as bucket midpoints.
  EXPECT_NEAR(static_cast<double>(first.Quantile(0.5)), 200, 200.0 / 128);
  EXPECT_TRUE(r.Collect().empty());
  r.Record(5'000'000);
  Histogram second = r.Collect();
  EXPECT_EQ(second.count(), 1u);
  EXPECT_NEAR(static_cast<double>(second.max()), 5e6, 5e6 / 128);
}

TEST(RecorderTest, OutOfRangeIsCountedNotRecorded) {
  Recorder r;
  EXPECT_FALSE(r.Record(UINT64_MAX));
  Histogram h = r.Collect();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.out_of_range(), 1u);
  EXPECT_EQ(r.Collect().out_of_range(), 0u);
}

TEST(RecorderTest, RecordCorrectedMatchesHistogram) {
  Recorder r;
  r.RecordCorrected(1000, 100);
  Histogram expected;
  expected.RecordCorrected(1000, 100);
  Histogram got = r.Collect();
  EXPECT_EQ(got.count(), expected.count());
  EXPECT_NEAR(got.sum(), expected.sum(), expected.sum() / 128);
  for (int i = 0; i < BucketLayout::kBucketCount; ++i) {
    ASSERT_EQ(got.bucket_count(i), expected.bucket_count(i));
  }
}

TEST(RecorderTest, RecordsOfAnExitedThreadAreNotLost) {
  Recorder r;
  std::thread t([&] {
    for (int i = 0; i < 1000; ++i) r.Record(42);
  });
  t.join();
  EXPECT_EQ(r.writer_count(), 1u);
  EXPECT_EQ(r.Collect().count(), 1000u);
  EXPECT_EQ(r.writer_count(), 0u);  // retired once collected
  EXPECT_TRUE(r.Collect().empty());
}

TEST(RecorderTest, AThreadOutlivingItsRecorderRecordsIntoTheNextOneCorrectly) {
  // The new recorder reuses the old one's slot; the thread must not write to the old writer.
  auto old_recorder = std::make_unique<Recorder>();
  old_recorder->Record(1);
  old_recorder.reset();
  Recorder fresh;
  fresh.Record(2);
  fresh.Record(2);
  Histogram h = fresh.Collect();
  EXPECT_EQ(h.count(), 2u);
  EXPECT_EQ(h.min(), 2u);
}

TEST(RecorderTest, ManyRecordersPerThread) {
  std::vector<std::unique_ptr<Recorder>> recorders;
  for (int i = 0; i < 50; ++i) recorders.push_back(std::make_unique<Recorder>());
  for (int i = 0; i < 50; ++i) {
    for (int k = 0; k <= i; ++k)
      recorders[static_cast<size_t>(i)]->Record(static_cast<uint64_t>(i));
  }
  for (int i = 0; i < 50; ++i) {
    Histogram h = recorders[static_cast<size_t>(i)]->Collect();
    ASSERT_EQ(h.count(), static_cast<uint64_t>(i + 1));
    ASSERT_EQ(h.min(), static_cast<uint64_t>(i));
  }
}

// Writers record known values while a reader keeps collecting; at the end every bucket, the
// count and the sum equal those of the values recorded, exactly.
TEST(RecorderConcurrencyTest, WritersAndACollectingReaderLoseNothing) {
  constexpr int kWriters = 4;
  constexpr int kPerWriter = 200'000;
  Recorder r;
  std::atomic<int> done{0};
  std::vector<Histogram> expected(kWriters);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      std::mt19937_64 rng(static_cast<uint64_t>(w) + 1);
      std::lognormal_distribution<double> ln(std::log(10e6), 1.0);
      for (int i = 0; i < kPerWriter; ++i) {
        const uint64_t v = static_cast<uint64_t>(ln(rng));
        r.Record(v);
        expected[static_cast<size_t>(w)].Record(v);
      }
      r.Record(UINT64_MAX);  // one out-of-range value per writer
      done.fetch_add(1);
    });
  }
  Histogram collected;
  int collections = 0;
  while (done.load() < kWriters) {
    r.CollectInto(collected);
    ++collections;
  }
  for (auto& t : writers) t.join();
  r.CollectInto(collected);

  Histogram all;
  for (const Histogram& h : expected) all.Merge(h);
  EXPECT_GT(collections, 0);
  EXPECT_EQ(collected.count(), uint64_t{kWriters} * kPerWriter);
  EXPECT_EQ(collected.out_of_range(), uint64_t{kWriters});
  EXPECT_NEAR(collected.sum(), all.sum(), all.sum() / 128);
  for (int i = 0; i < BucketLayout::kBucketCount; ++i) {
    ASSERT_EQ(collected.bucket_count(i), all.bucket_count(i)) << "bucket " << i;
  }
  EXPECT_EQ(r.writer_count(), 0u);
}

TEST(RecorderConcurrencyTest, ThreadsComingAndGoingWhileCollecting) {
  Recorder r;
  std::atomic<bool> stop{false};
  Histogram collected;
  std::thread reader([&] {
    while (!stop.load()) r.CollectInto(collected);
  });
  for (int round = 0; round < 20; ++round) {
    std::vector<std::thread> ts;
    for (int t = 0; t < 3; ++t) {
      ts.emplace_back([&] {
        for (int i = 0; i < 1000; ++i) r.Record(1000);
      });
    }
    for (auto& t : ts) t.join();
  }
  stop.store(true);
  reader.join();
  r.CollectInto(collected);
  EXPECT_EQ(collected.count(), 20u * 3 * 1000);
}

}  // namespace
}  // namespace tailguard

namespace tailguard {
namespace {

// Regression: a thread_local whose destructor records after the recorder's own thread-local
// cache is destroyed (it was constructed first, so it is destroyed last) used freed memory.
Recorder* flush_target = nullptr;
struct FlushOnExit {
  bool armed = false;
  ~FlushOnExit() {
    if (armed) flush_target->Record(5000);
  }
};
thread_local FlushOnExit flush_on_exit;

TEST(RecorderTest, RecordsFromLateThreadLocalDestructorsAreKept) {
  Recorder r;
  flush_target = &r;
  std::thread t([&] {
    flush_on_exit.armed = true;  // constructed before the recorder's cache
    r.Record(1000);
  });
  t.join();
  Histogram h = r.Collect();
  EXPECT_EQ(h.count(), 2u);
  EXPECT_NEAR(static_cast<double>(h.max()), 5000, 5000.0 / 128);
}

TEST(RecorderTest, LongStallCorrectionIsBoundedWork) {
  Recorder r;
  // An hour-long stall at one request per microsecond: 3.6e9 corrections, added per bucket.
  ASSERT_TRUE(r.RecordCorrected(3'600'000'000'000, 1000));
  Histogram h = r.Collect();
  EXPECT_EQ(h.count() + h.out_of_range(), 3'600'000'000u);
  Histogram exact;
  exact.RecordCorrected(3'600'000'000'000, 1000);
  EXPECT_EQ(exact.count(), 3'600'000'000u);
  EXPECT_NEAR(static_cast<double>(exact.Quantile(0.5)), 1.8e12, 1.8e12 / 100);
}

}  // namespace
}  // namespace tailguard
