// The built-in model backend's own cost per request: parsing the KServe v2 JSON body, the queue
// and the hand-over to a worker thread and back, the feature lookup (an in-memory store), building
// the input tensors, and encoding the response, with profiling off. The demo's risk-control MLP,
// compared with calling the same TorchScript module directly in a loop on the same input, run
// alternately in one process (BM_Direct, BM_Backend, repeated). Prints FIGURE backend_overhead_us
// (the difference of the medians) and the two times.
#include <benchmark/benchmark.h>
// ivalue.h first: with Clang in C++20, torch/script.h alone reaches a std::vector<IValue> while
// IValue is still incomplete.
#include <ATen/core/ivalue.h>
#include <torch/script.h>

#include <future>
#include <string>
#include <vector>

#include "figure_reporter.h"
#include "model/backend.h"
#include "model/torch_model.h"
#include "store/feature_store.h"

namespace tailguard {
namespace {

const std::string kModel = std::string(TAILGUARD_DEMO_MODELS_DIR) + "/risk_mlp_v1.pt";
constexpr int kWarmUp = 50;  // TorchScript's profiling executor optimises over the first runs

// The risk model's request: 48 stored features (from the feature store) and 16 real-time ones.
std::vector<float> Stored() { return store::SeededFeatureVector(7, 0, 48); }
std::vector<float> Realtime() {
  std::vector<float> v(16);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) / 16;
  return v;
}

void BM_Direct(benchmark::State& state) {
  model::TorchModel::SetIntraOpThreads(1);
  torch::jit::Module m = torch::jit::load(kModel);
  m.eval();
  torch::NoGradGuard no_grad;
  std::vector<float> stored = Stored(), realtime = Realtime();
  auto once = [&] {
    torch::Tensor a = torch::from_blob(stored.data(), {1, 48}, torch::kFloat).clone();
    torch::Tensor b = torch::from_blob(realtime.data(), {1, 16}, torch::kFloat).clone();
    torch::Tensor out = m.forward({a, b}).toTensor().contiguous();
    benchmark::DoNotOptimize(out.data_ptr<float>()[0]);
  };
  for (int i = 0; i < kWarmUp; ++i) once();
  for (auto _ : state) once();
}

void BM_Backend(benchmark::State& state) {
  std::unique_ptr<store::FeatureStore> features = store::NewMemoryFeatureStore();
  const std::vector<float> stored = Stored();
  if (!features->Put("user:0", stored).ok()) state.SkipWithError("feature store");
  model::ModelConfig c;
  c.name = "risk";
  c.versions = {{"1", kModel}};
  c.profile_sample_rate = 0;
  c.features = {"user_id", "user:"};
  model::BackendOptions o;
  o.intra_op_threads = 1;
  o.features = [&features](std::string_view key) { return features->Get(key); };
  auto backend = model::ModelBackend::Create({c}, o);
  if (!backend.ok()) {
    state.SkipWithError(std::string(backend.status().message()).c_str());
    return;
  }
  std::string body =
      R"({"id":"b","inputs":[{"name":"user_id","shape":[1],"datatype":"BYTES","data":["0"]},)"
      R"({"name":"realtime","shape":[1,16],"datatype":"FP32","data":[)";
  const std::vector<float> realtime = Realtime();
  for (size_t i = 0; i < realtime.size(); ++i) {
    body += (i ? "," : "") + std::to_string(realtime[i]);
  }
  body += "]}]}";
  auto once = [&] {
    std::promise<model::InferResult> p;
    (*backend)->Submit("risk", "", body, {},
                       [&p](model::InferResult r) { p.set_value(std::move(r)); });
    model::InferResult r = p.get_future().get();
    if (r.status != 200) state.SkipWithError(r.body.c_str());
    benchmark::DoNotOptimize(r.body.data());
  };
  for (int i = 0; i < kWarmUp; ++i) once();
  for (auto _ : state) once();
}

BENCHMARK(BM_Direct)->Unit(benchmark::kMicrosecond)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_Backend)->Unit(benchmark::kMicrosecond)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace
}  // namespace tailguard

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  tailguard::FigureReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  const double direct = reporter.RealTime("BM_Direct/repeats:5_median");
  const double backend = reporter.RealTime("BM_Backend/repeats:5_median");
  if (direct > 0 && backend > 0) {
    tailguard::PrintFigure("backend_direct_us", direct, "us");
    tailguard::PrintFigure("backend_request_us", backend, "us");
    tailguard::PrintFigure("backend_overhead_us", std::max(backend - direct, 0.001), "us");
  }
  return 0;
}
