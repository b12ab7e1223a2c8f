// Slice attribution on shaped tables: one culprit combination, a culprit one level up, two
// culprits, a leaf new at T, and the inputs it refuses.
#include "diagnose/slices.h"

#include <string>

#include "gtest/gtest.h"

namespace tailguard::diagnose {
namespace {

// version x route x client, 100 requests per leaf per minute for 10 minutes, mean 80 ms with a
// small deterministic wobble; at T = 600 the leaves for which `raised` says so take 4x.
template <typename Raised>
SliceTable Table(Raised raised) {
  SliceTable t;
  t.dimensions = {"version", "route", "client"};
  for (int64_t ts = 0; ts <= 600; ts += 60) {
    int i = 0;
    for (const char* v : {"v1", "v2"}) {
      for (const char* r : {"/a", "/b", "/c"}) {
        for (const char* c : {"web", "app"}) {
          double mean = 0.080 * (1 + 0.01 * ((ts / 60 + i++) % 3 - 1));
          if (ts == 600 && raised(v, r, c)) mean *= 4;
          AddSliceRow(t, ts, {v, r, c}, mean * 100, 100);
        }
      }
    }
  }
  return t;
}

std::string Named(const SliceTable& t, const SliceAttribution& a) {
  std::string out;
  for (size_t i = 0; i < a.named; ++i)
    out += (out.empty() ? "" : " | ") + SliceName(t, a.slices[i]);
  return out;
}

TEST(SlicesTest, OneCombinationIsNamedExactly) {
  SliceTable t =
      Table([](std::string v, std::string r, std::string) { return v == "v2" && r == "/b"; });
  absl::StatusOr<SliceAttribution> a = AttributeSlices(t, 600);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(Named(t, *a), "version=v2&route=/b");
  EXPECT_DOUBLE_EQ(a->slices[0].score, 1);
  EXPECT_DOUBLE_EQ(a->slices[0].explained, 1);
  EXPECT_EQ(a->leaves, 12u);
  EXPECT_EQ(a->raised, 2u);
  // Its children and its parents follow as candidates, each scoring less.
  ASSERT_GT(a->slices.size(), 3u);
  EXPECT_FALSE(a->slices[1].selected);
  EXPECT_LT(a->slices[1].score, 1);
}

TEST(SlicesTest, TheMostGeneralSliceThatFitsWins) {
  // Every leaf of v2 rose: "version=v2", not its six children, not v2 with a route.
  SliceTable t = Table([](std::string v, std::string, std::string) { return v == "v2"; });
  absl::StatusOr<SliceAttribution> a = AttributeSlices(t, 600);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(Named(t, *a), "version=v2");
}

TEST(SlicesTest, TwoCulpritsAreBothNamed) {
  SliceTable t = Table([](std::string v, std::string r, std::string c) {
    return (v == "v1" && r == "/a" && c == "app") || (v == "v2" && r == "/c");
  });
  absl::StatusOr<SliceAttribution> a = AttributeSlices(t, 600);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->named, 2u);
  EXPECT_EQ(Named(t, *a), "version=v2&route=/c | version=v1&route=/a&client=app");
}

TEST(SlicesTest, ALeafNewAtTIsComparedWithTheTotal) {
  SliceTable t = Table([](std::string, std::string, std::string) { return false; });
  AddSliceRow(t, 600, {"v3", "/a", "web"}, 0.4 * 500, 500);  // a canary, slow from its start
  absl::StatusOr<SliceAttribution> a = AttributeSlices(t, 600);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(Named(t, *a), "version=v3");
}

TEST(SlicesTest, RowsAfterTAreIgnored) {
  SliceTable t =
      Table([](std::string v, std::string r, std::string) { return v == "v2" && r == "/b"; });
  AddSliceRow(t, 660, {"v1", "/a", "web"}, 1e6, 1);  // a later interval: not looked at
  absl::StatusOr<SliceAttribution> a = AttributeSlices(t, 600);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(Named(t, *a), "version=v2&route=/b");
}

TEST(SlicesTest, RefusesWhatCannotBeAttributed) {
  SliceTable t = Table([](std::string, std::string, std::string) { return false; });
  EXPECT_EQ(AttributeSlices(t, 601).status().message(), "no requests at --at 601");
  EXPECT_EQ(AttributeSlices(t, 0).status().message(),
            "no interval with requests before --at 0 to compare with");
  SliceTable flat;
  flat.dimensions = {"route"};
  AddSliceRow(flat, 0, {"/a"}, 10, 10);
  AddSliceRow(flat, 60, {"/a"}, 10, 10);
  EXPECT_EQ(AttributeSlices(flat, 60).status().message(),
            "sum/count is 1 both at 60 and before it: nothing to explain");
}

}  // namespace
}  // namespace tailguard::diagnose
