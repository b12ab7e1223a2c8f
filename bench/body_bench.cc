// The request-body inspectors of the data path (server/protocol.h), on 1 MiB bodies: an OpenAI
// chat request with one long message, a completion whose model name is 1 MiB long (the hostile
// case of issue 15), and a KServe request whose tensor is 1 MiB of floats as JSON. Beside them,
// nlohmann's SAX parser (what the inspectors used before server/json_scan.h) on the same chat
// body, so that the ratio is measured in one run on one machine.
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>
#include <string>

#include "figure_reporter.h"
#include "server/protocol.h"

namespace tailguard {
namespace {

constexpr size_t kBodyBytes = 1 << 20;

const std::string& ChatBody() {
  static const std::string body = [] {
    std::string text;
    const std::string_view words = "the quick brown fox jumps over the lazy dog, ";
    while (text.size() < kBodyBytes) text += words;
    text.resize(kBodyBytes);
    return R"({"model":"qwen","stream":true,"messages":[{"role":"user","content":")" + text +
           R"("}]})";
  }();
  return body;
}

const std::string& LongModelBody() {
  static const std::string body =
      R"({"model":")" + std::string(kBodyBytes, 'a') + R"(","prompt":"hello"})";
  return body;
}

const std::string& TensorBody() {
  static const std::string body = [] {
    std::string data;
    size_t n = 0;
    while (data.size() < kBodyBytes) {
      data += n == 0 ? "" : ",";
      data += std::to_string(0.001 * static_cast<double>(n % 1000));
      ++n;
    }
    return R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,)" + std::to_string(n) +
           R"(],"data":[)" + data + "]}]}";
  }();
  return body;
}

void BM_OpenAIChat(benchmark::State& state) {
  const std::string& body = ChatBody();
  for (auto _ : state) benchmark::DoNotOptimize(server::InspectOpenAIRequest(body, true));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_OpenAIChat)->Unit(benchmark::kMicrosecond);

void BM_OpenAILongModel(benchmark::State& state) {
  const std::string& body = LongModelBody();
  for (auto _ : state) benchmark::DoNotOptimize(server::InspectOpenAIRequest(body, false));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_OpenAILongModel)->Unit(benchmark::kMicrosecond);

void BM_KServeTensor(benchmark::State& state) {
  const std::string& body = TensorBody();
  for (auto _ : state) benchmark::DoNotOptimize(server::KServeInputSize(body));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_KServeTensor)->Unit(benchmark::kMicrosecond);

// nlohmann's SAX parser doing nothing with what it reads: a floor for the old inspectors.
struct NullSax : nlohmann::json_sax<nlohmann::json> {
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

void BM_NlohmannSaxChat(benchmark::State& state) {
  const std::string& body = ChatBody();
  for (auto _ : state) {
    NullSax sax;
    benchmark::DoNotOptimize(nlohmann::json::sax_parse(body.begin(), body.end(), &sax));
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_NlohmannSaxChat)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tailguard

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  tailguard::FigureReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  const auto mb_per_s = [&](const char* name) {
    return reporter.Counter(name, "bytes_per_second") / 1e6;
  };
  tailguard::PrintFigure("openai_inspect_mb_per_s", mb_per_s("BM_OpenAIChat"), "MB/s");
  tailguard::PrintFigure("openai_long_model_inspect_mb_per_s", mb_per_s("BM_OpenAILongModel"),
                         "MB/s");
  tailguard::PrintFigure("kserve_inspect_mb_per_s", mb_per_s("BM_KServeTensor"), "MB/s");
  const double old = mb_per_s("BM_NlohmannSaxChat");
  if (old > 0) {
    tailguard::PrintFigure("openai_inspect_speedup_vs_nlohmann_sax",
                           mb_per_s("BM_OpenAIChat") / old, "x");
  }
  return 0;
}
