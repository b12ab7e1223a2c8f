#include "common/series_id.h"

#include <gtest/gtest.h>

namespace tailguard {
namespace {

TEST(SeriesIdTest, IsFnv1a64InHex) {
  EXPECT_EQ(SeriesId(""), "cbf29ce484222325");  // the FNV-1a 64 offset basis
  // Computed independently (Python): the id the dashboard's URLs carry.
  EXPECT_EQ(SeriesId(R"(tailguard_request_duration_seconds{model="rank",route="/v1/rank",)"
                     R"(stage="total",version="v3"})"),
            "f169b0f8a247ab65");
}

TEST(SeriesIdTest, DashboardUrlsAreTheFormsThePageReads) {
  EXPECT_EQ(SeriesDashboardUrl("", "m{}"), "");
  EXPECT_EQ(SeriesDashboardUrl("http://h:9090//", ""),
            "http://h:9090/?view=series&id=cbf29ce484222325");
  EXPECT_EQ(AlertsDashboardUrl("http://h:9090/"), "http://h:9090/?view=alerts");
  EXPECT_EQ(AlertsDashboardUrl(""), "");
}

}  // namespace
}  // namespace tailguard
