// The alert journal's tick commit: a tick's records (alert transitions and rendered webhook
// notifications) and the engine's state written to the SQLite store in one transaction, as the
// gateway's analysis loop does once a tick. Prints FIGURE journal_tick_commit_us (a tick with 10
// alerts firing at once: 10 transitions, 10 notifications) and FIGURE outbox_enqueue_us (per
// notification, in a 100-notification tick).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "alert/notify/journal.h"
#include "figure_reporter.h"

namespace tailguard {
namespace {

using namespace std::chrono_literals;

AlertConfig Rules() {
  AlertConfig c;
  c.route.group_wait = 0s;
  c.route.group_interval = 1s;  // a resolved group is notified at the next tick
  c.route.group_by = {"..."};   // one notification per alert
  c.default_receiver = "hook";
  ReceiverOptions hook;
  hook.name = "hook";
  hook.route = c.route;
  hook.target.kind = ReceiverTarget::Kind::kWebhook;
  hook.target.url = "http://127.0.0.1:9/hook";
  c.receivers.push_back(hook);
  AlertRule r;
  r.name = "slow";
  AlertTier t;
  t.above = Threshold::Absolute(0.1);
  t.severity = "warning";
  r.tiers = {t};
  r.debounce.pre_alert_after = 1;
  r.debounce.alert_after = 0s;
  r.debounce.resolve_after = 0s;
  c.rules.push_back(r);
  return c;
}

// Each iteration: `alerts` series fire in one tick (pre_alert, fire, one notification each) and
// resolve in the next (resolve, one notification each); both ticks are committed.
void BM_JournalTick(benchmark::State& state) {
  const int alerts = static_cast<int>(state.range(0));
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("journal_bench_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    auto store = store::EventStore::Open((dir / "bench.db").string());
    if (!store.ok()) {
      state.SkipWithError(std::string(store.status().message()).c_str());
      return;
    }
    const AlertConfig config = Rules();
    auto journal = notify::AlertJournal::Create(config, **store, {});
    auto engine = AlertEngine::Create(config, **journal, journal->get());
    std::vector<Labels> labels;
    for (int i = 0; i < alerts; ++i) labels.push_back({{"model", "m" + std::to_string(i)}});
    WallTime t = FakeClock::DefaultStart();
    auto tick = [&](double p99) {
      (*journal)->BeginTick(t);
      for (const Labels& l : labels) {
        Observation o;
        o.time = t;
        o.metric = "tailguard_request_duration_seconds";
        o.labels = l;
        o.p99 = p99;
        (*engine)->Observe(o);
      }
      (*engine)->Advance(t);
      (*journal)->EndTick(**engine);
      t += 1s;
    };
    for (auto _ : state) {
      tick(0.5);   // fire
      tick(0.01);  // resolve
    }
    state.SetItemsProcessed(state.iterations() * 2);  // ticks
    state.counters["notifications"] = static_cast<double>((*journal)->stats().notifications);
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_JournalTick)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tailguard

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  tailguard::FigureReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  const double ticks10 = reporter.Counter("BM_JournalTick/10", "items_per_second");
  if (ticks10 > 0) tailguard::PrintFigure("journal_tick_commit_us", 1e6 / ticks10, "us");
  const double ticks100 = reporter.Counter("BM_JournalTick/100", "items_per_second");
  // A tick of 100 alerts carries 100 notifications (and 100 to 200 transitions).
  if (ticks100 > 0) tailguard::PrintFigure("outbox_enqueue_us", 1e6 / ticks100 / 100, "us");
  return 0;
}
