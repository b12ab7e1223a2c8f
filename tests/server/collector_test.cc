// /metrics from registered collectors: the writer's text format (counters with _total, gauges,
// OpenMetrics naming), the API's page made of the registry's histograms, the gateway's
// collectors, any collector a subsystem adds (in order, before the process metrics) and each
// subsystem's collector only when the subsystem is there.
#include "metrics/collector.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/api.h"

namespace tailguard {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsWriterTest, WritesCountersGaugesAndSamples) {
  std::string out;
  metrics::MetricsWriter w(out, /*openmetrics=*/false);
  w.Counter("tg_things", "Things done.");
  w.Sample({{"kind", "a\"b"}}, 3);
  w.Gauge("tg_level", "A level.");
  w.Sample({}, 0.25);
  EXPECT_EQ(out,
            "# HELP tg_things_total Things done.\n# TYPE tg_things_total counter\n"
            "tg_things_total{kind=\"a\\\"b\"} 3\n"
            "# HELP tg_level A level.\n# TYPE tg_level gauge\ntg_level 0.25\n");
  std::string om;
  metrics::MetricsWriter o(om, /*openmetrics=*/true);
  o.Counter("tg_things", "Things done.");
  o.Sample({}, 1);
  EXPECT_EQ(om, "# HELP tg_things Things done.\n# TYPE tg_things counter\ntg_things_total 1\n");
}

// A subsystem of its own (a mitigation, say) with one gauge.
class Breakers final : public metrics::Collector {
 public:
  void Collect(metrics::MetricsWriter& out) const override {
    out.Gauge("tailguard_breaker_open", "1 while the route's latency breaker is open.");
    out.Sample({{"route", "rank"}}, 1);
  }
};

TEST(ApiMetricsTest, ThePageIsTheRegistryThenEveryCollectorInOrder) {
  Registry registry;
  absl::StatusOr<Series*> s =
      registry.GetOrCreate(kRequestDurationMetric, {{"route", "rank"}, {"stage", "total"}});
  ASSERT_TRUE(s.ok());
  (*s)->Record(1'000'000);
  registry.Collect();
  server::GatewayCounters counters;
  server::RouteCounterTable routes;
  Breakers breakers;
  server::ApiSources sources;
  sources.registry = &registry;
  sources.counters = &counters;
  sources.routes = &routes;
  sources.collectors = {&breakers};
  server::Api api(std::move(sources));
  const std::string page = api.Metrics(/*openmetrics=*/false);

  const size_t histograms = page.find("tailguard_request_duration_seconds_bucket{");
  const size_t gateway = page.find("# TYPE tailguard_requests_in_flight gauge");
  const size_t breaker = page.find("tailguard_breaker_open{route=\"rank\"} 1\n");
  const size_t process = page.find("process_");
  ASSERT_NE(histograms, std::string::npos) << page;
  ASSERT_NE(gateway, std::string::npos) << page;
  ASSERT_NE(breaker, std::string::npos) << page;
  EXPECT_LT(histograms, gateway);
  EXPECT_LT(gateway, breaker);
  ASSERT_NE(process, std::string::npos) << "procfs is there on Linux";
  EXPECT_LT(breaker, process);
  // No journal, delivery, store, OTLP exporter or model backend: none of their families.
  EXPECT_THAT(page, Not(HasSubstr("tailguard_alert_notifications")));
  EXPECT_THAT(page, Not(HasSubstr("tailguard_notification_attempts")));
  EXPECT_THAT(page, Not(HasSubstr("tailguard_outbox_messages")));
  EXPECT_THAT(page, Not(HasSubstr("tailguard_otlp_spans_exported")));
  EXPECT_THAT(page, Not(HasSubstr("tailguard_model_info")));

  const std::string om = api.Metrics(/*openmetrics=*/true);
  EXPECT_TRUE(om.ends_with("# EOF\n"));
  EXPECT_THAT(om, HasSubstr("tailguard_breaker_open{route=\"rank\"} 1\n"));
}

}  // namespace
}  // namespace tailguard
