#include "model/backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
// ivalue.h first: with Clang in C++20, torch/script.h alone reaches a std::vector<IValue> while
// IValue is still incomplete.
#include <ATen/core/ivalue.h>
#include <torch/script.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "model/torch_model.h"
#include "store/feature_store.h"

namespace tailguard::model {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Key;
using Json = nlohmann::json;

const std::string kDir = TAILGUARD_DEMO_MODELS_DIR;

// A feature store that can hold every Get until released, to fill a queue deterministically.
class GatedStore final : public store::FeatureStore {
 public:
  absl::StatusOr<std::vector<float>> Get(std::string_view key) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    if (key == "user:missing") return absl::NotFoundError("no such key");
    std::vector<float> v(key == "user:wide" ? 64 : 48);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(key.size() + i) / 100.0f;
    return v;
  }
  absl::Status Put(std::string_view, std::span<const float>) override { return absl::OkStatus(); }
  std::string Describe() const override { return "gated"; }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void WaitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return entered_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int entered_ = 0;
};

ModelConfig Risk() {
  ModelConfig c;
  c.name = "risk";
  c.versions = {{"1", kDir + "/risk_mlp_v1.pt"}, {"2", kDir + "/risk_mlp_v2.pt"}};
  c.features = {"user_id", "user:"};
  c.profile_sample_rate = 0;
  return c;
}

ModelConfig Text() {
  ModelConfig c;
  c.name = "text";
  c.versions = {{"1", kDir + "/text_classifier.pt"}};
  c.profile_sample_rate = 0;
  return c;
}

std::string RiskBody(const std::vector<std::string>& users, float realtime = 0.5f) {
  Json doc;
  doc["id"] = "r";
  doc["inputs"] = Json::array();
  doc["inputs"].push_back(
      {{"name", "user_id"}, {"shape", {users.size()}}, {"datatype", "BYTES"}, {"data", users}});
  std::vector<float> rt(users.size() * 16, realtime);
  doc["inputs"].push_back(
      {{"name", "realtime"}, {"shape", {users.size(), 16}}, {"datatype", "FP32"}, {"data", rt}});
  return doc.dump();
}

std::string TextBody(int rows, int length, int seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::vector<int64_t> ids(static_cast<size_t>(rows * length));
  for (int64_t& id : ids) id = static_cast<int64_t>(rng() % 5000);
  Json doc;
  doc["inputs"] = Json::array();
  doc["inputs"].push_back(
      {{"name", "ids"}, {"shape", {rows, length}}, {"datatype", "INT64"}, {"data", ids}});
  return doc.dump();
}

// Submits and waits for the answer.
InferResult Call(ModelBackend& b, std::string_view model, std::string_view version,
                 const std::string& body, MonoTime deadline = {}) {
  std::promise<InferResult> p;
  b.Submit(model, version, body, deadline, [&p](InferResult r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}

std::vector<double> Outputs(const InferResult& r) {
  const Json doc = Json::parse(r.body);
  return doc["outputs"][0]["data"].get<std::vector<double>>();
}

std::unique_ptr<ModelBackend> Make(std::vector<ModelConfig> models, store::FeatureStore* features,
                                   Registry* registry = nullptr) {
  BackendOptions o;
  o.registry = registry;
  if (features != nullptr) {
    o.features = [features](std::string_view key) { return features->Get(key); };
  }
  absl::StatusOr<std::unique_ptr<ModelBackend>> b = ModelBackend::Create(std::move(models), o);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *std::move(b) : nullptr;
}

TEST(BackendTest, OutputsEqualDirectLibTorchCalls) {
  GatedStore features;
  auto b = Make({Risk(), Text()}, &features);
  ASSERT_NE(b, nullptr);

  // The risk model: the backend fetched the stored features; call the module with the same.
  const InferResult r = Call(*b, "risk", "", RiskBody({"7", "42"}, 0.25f));
  ASSERT_EQ(r.status, 200) << r.body;
  torch::jit::Module risk = torch::jit::load(kDir + "/risk_mlp_v1.pt");
  risk.eval();
  torch::NoGradGuard no_grad;
  torch::Tensor stored = torch::empty({2, 48});
  for (int row = 0; row < 2; ++row) {
    const std::vector<float> v = *features.Get(row == 0 ? "user:7" : "user:42");
    for (int i = 0; i < 48; ++i) stored[row][i] = v[static_cast<size_t>(i)];
  }
  const torch::Tensor want =
      risk.forward({stored, torch::full({2, 16}, 0.25f)}).toTensor().contiguous();
  const std::vector<double> got = Outputs(r);
  ASSERT_EQ(got.size(), 2u);
  for (int i = 0; i < 2; ++i)
    EXPECT_FLOAT_EQ(static_cast<float>(got[static_cast<size_t>(i)]), want[i][0].item<float>());
  const Json doc = Json::parse(r.body);
  EXPECT_EQ(doc["model_name"], "risk");
  EXPECT_EQ(doc["model_version"], "1");
  EXPECT_EQ(doc["id"], "r");
  EXPECT_EQ(doc["outputs"][0]["shape"], Json::parse("[2,1]"));
  EXPECT_THAT(r.server_timing, HasSubstr("queue;dur="));
  EXPECT_THAT(r.server_timing, HasSubstr("feature;dur="));
  EXPECT_THAT(r.server_timing, HasSubstr("infer;dur="));
  EXPECT_EQ(r.input_size, 2u + 32u);

  // The text classifier, on integer token ids.
  const std::string body = TextBody(3, 20, 1);
  const InferResult t = Call(*b, "text", "1", body);
  ASSERT_EQ(t.status, 200) << t.body;
  torch::jit::Module text = torch::jit::load(kDir + "/text_classifier.pt");
  text.eval();
  const std::vector<int64_t> ids =
      Json::parse(body)["inputs"][0]["data"].get<std::vector<int64_t>>();
  const torch::Tensor in =
      torch::from_blob(const_cast<int64_t*>(ids.data()), {3, 20}, torch::kLong).clone();
  const torch::Tensor logits = text.forward({in}).toTensor().contiguous();
  const std::vector<double> out = Outputs(t);
  ASSERT_EQ(out.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_FLOAT_EQ(static_cast<float>(out[static_cast<size_t>(i)]),
                    logits.view({-1})[i].item<float>());
  }
}

TEST(BackendTest, BatchesCompatibleRequestsUpToTheLimitAndSplitsTheAnswers) {
  ModelConfig text = Text();
  text.max_batch_size = 4;
  text.max_queue_delay = std::chrono::seconds(2);  // long enough for all 8 to arrive
  Registry registry;
  auto b = Make({text}, nullptr, &registry);
  ASSERT_NE(b, nullptr);
  std::vector<std::future<InferResult>> answers;
  std::vector<std::promise<InferResult>> promises(8);
  for (int i = 0; i < 8; ++i) {
    answers.push_back(promises[static_cast<size_t>(i)].get_future());
    b->Submit("text", "", TextBody(1, 12, i), {}, [&promises, i](InferResult r) {
      promises[static_cast<size_t>(i)].set_value(std::move(r));
    });
  }
  // The same requests one by one: the batched answers must match.
  ModelConfig single = Text();
  auto one = Make({single}, nullptr);
  for (int i = 0; i < 8; ++i) {
    const InferResult r = answers[static_cast<size_t>(i)].get();
    ASSERT_EQ(r.status, 200) << r.body;
    const InferResult alone = Call(*one, "text", "", TextBody(1, 12, i));
    const std::vector<double> got = Outputs(r), want = Outputs(alone);
    ASSERT_EQ(got.size(), 2u);
    for (size_t k = 0; k < 2; ++k) EXPECT_NEAR(got[k], want[k], 1e-4) << i;
  }
  const ModelStatus s = b->Status()[0];
  EXPECT_EQ(s.versions[0].requests, 8u);
  EXPECT_EQ(s.versions[0].batches, 2u);  // 4 + 4: never more than max_batch_size rows
  // The same as signals: two passes of 4 rows each, and an empty queue.
  registry.Collect();
  Series* rows = registry.Find("tailguard_model_batch_size", {{"model", "text"}, {"version", "1"}});
  ASSERT_NE(rows, nullptr);
  EXPECT_EQ(rows->unit(), Unit::kCount);
  EXPECT_EQ(rows->Cumulative().count(), 2u);
  EXPECT_EQ(rows->Cumulative().min(), 4u);
  EXPECT_EQ(rows->Cumulative().max(), 4u);
  Series* queued = registry.Find("tailguard_model_queue_depth", {{"model", "text"}});
  ASSERT_NE(queued, nullptr);
  EXPECT_EQ(queued->kind(), SeriesKind::kGauge);
  EXPECT_EQ(queued->level(), 0);
  EXPECT_EQ(queued->Cumulative().count(), 1u);  // sampled once, by the collection

  // Different sequence lengths never share a pass.
  ModelConfig quick = Text();
  quick.max_batch_size = 8;
  quick.max_queue_delay = std::chrono::milliseconds(300);
  auto c = Make({quick}, nullptr);
  std::promise<InferResult> p1, p2;
  c->Submit("text", "", TextBody(1, 8, 1), {}, [&](InferResult r) { p1.set_value(r); });
  c->Submit("text", "", TextBody(1, 16, 2), {}, [&](InferResult r) { p2.set_value(r); });
  EXPECT_EQ(p1.get_future().get().status, 200);
  EXPECT_EQ(p2.get_future().get().status, 200);
  EXPECT_EQ(c->Status()[0].versions[0].batches, 2u);
}

// Submits `bodies` while the store holds the worker, so that they are queued together and
// batched; returns the answers in order.
std::vector<InferResult> Batched(ModelBackend& b, GatedStore& features, std::string_view model,
                                 const std::vector<std::string>& bodies) {
  features.Close();
  std::vector<std::promise<InferResult>> promises(bodies.size() + 1);
  // A first request holds the worker in its lookup; the others queue behind it.
  b.Submit("risk", "", RiskBody({"0"}), {},
           [&promises](InferResult r) { promises[0].set_value(std::move(r)); });
  features.WaitEntered(1);
  for (size_t i = 0; i < bodies.size(); ++i) {
    b.Submit(model, "", bodies[i], {},
             [&promises, i](InferResult r) { promises[i + 1].set_value(std::move(r)); });
  }
  features.Open();
  std::vector<InferResult> out;
  for (auto& p : promises) out.push_back(p.get_future().get());
  out.erase(out.begin());
  return out;
}

TEST(BackendTest, ABatchIsRegroupedAfterFeatureLookupsAndABadRequestFailsAlone) {
  GatedStore features;
  ModelConfig risk = Risk();
  risk.max_batch_size = 8;
  ModelConfig text = Text();
  auto b = Make({risk}, &features);
  ASSERT_NE(b, nullptr);
  auto single = Make({Risk()}, &features);
  // "wide" has 64 stored features: it cannot share a pass with the 48-feature rows (and the
  // model rejects it); two keys in one request against one realtime row is no batch either.
  const std::vector<std::string> bodies = {
      RiskBody({"1"}), RiskBody({"wide"}), RiskBody({"2", "3"}), RiskBody({"4"}),
      R"({"inputs":[{"name":"user_id","shape":[2],"datatype":"BYTES","data":["5","6"]},)"
      R"({"name":"realtime","shape":[1,16],"datatype":"FP32","data":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}]})"};
  const std::vector<InferResult> got = Batched(*b, features, "risk", bodies);
  ASSERT_EQ(got.size(), bodies.size());
  for (size_t i : {0u, 2u, 3u}) {
    ASSERT_EQ(got[i].status, 200) << i << " " << got[i].body;
    const InferResult alone = Call(*single, "risk", "", bodies[i]);
    ASSERT_EQ(alone.status, 200);
    const std::vector<double> a = Outputs(got[i]), w = Outputs(alone);
    ASSERT_EQ(a.size(), w.size());
    for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], w[k], 1e-5) << i;
  }
  EXPECT_EQ(got[1].status, 400);
  EXPECT_THAT(got[1].body, HasSubstr("model_error"));
  EXPECT_EQ(got[4].status, 400);
  // The good rows shared one pass: 1 (the holder) + 1 (1, 2+3, 4) + the two that ran alone.
  EXPECT_EQ(b->Status()[0].versions[0].batches, 4u);
}

TEST(BackendTest, OneBadRequestInABatchFailsAloneAndTheOthersAreAnswered) {
  GatedStore features;
  ModelConfig risk = Risk();
  ModelConfig text = Text();
  text.max_batch_size = 4;
  text.max_queue_delay = std::chrono::seconds(2);
  auto b = Make({risk, text}, &features);
  ASSERT_NE(b, nullptr);
  std::vector<std::promise<InferResult>> promises(4);
  // Token 7777 is past the vocabulary (5000): the embedding rejects it.
  const std::string bad =
      R"({"inputs":[{"name":"ids","shape":[1,4],"datatype":"INT64","data":[1,2,7777,4]}]})";
  for (int i = 0; i < 4; ++i) {
    b->Submit("text", "", i == 2 ? bad : TextBody(1, 4, i), {}, [&promises, i](InferResult r) {
      promises[static_cast<size_t>(i)].set_value(std::move(r));
    });
  }
  for (int i = 0; i < 4; ++i) {
    const InferResult r = promises[static_cast<size_t>(i)].get_future().get();
    EXPECT_EQ(r.status, i == 2 ? 400 : 200) << i << " " << r.body;
  }
}

TEST(BackendTest, AFullQueueAnswers503WithRetryAfterAndLosesNothingQueued) {
  GatedStore features;
  ModelConfig risk = Risk();
  risk.queue_capacity = 2;
  auto b = Make({risk}, &features);
  ASSERT_NE(b, nullptr);
  features.Close();
  std::vector<std::promise<InferResult>> promises(3);
  for (size_t i = 0; i < 3; ++i) {
    b->Submit("risk", "", RiskBody({std::to_string(i)}), {},
              [&promises, i](InferResult r) { promises[i].set_value(std::move(r)); });
    if (i == 0) features.WaitEntered(1);  // the worker holds the first; two wait in the queue
  }
  EXPECT_EQ(b->Status()[0].queued, 2u);
  const InferResult full = Call(*b, "risk", "", RiskBody({"9"}));
  EXPECT_EQ(full.status, 503);
  EXPECT_GE(full.retry_after_s, 1);
  EXPECT_THAT(full.body, HasSubstr("queue_full"));
  EXPECT_EQ(full.version, "1");  // recorded under the version it would have run on
  EXPECT_EQ(b->Status()[0].rejected, 1u);
  features.Open();
  for (auto& p : promises) EXPECT_EQ(p.get_future().get().status, 200);
}

TEST(BackendTest, SwitchingAndLoadingVersionsUnderLoadFailsNoRequest) {
  GatedStore features;
  auto b = Make({Risk()}, &features);
  ASSERT_NE(b, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0};
  std::mutex seen_mu;
  std::set<std::string> seen;
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; !stop.load() || i < 50; ++i) {
        const InferResult r = Call(*b, "risk", "", RiskBody({std::to_string(t * 1000 + i)}));
        if (r.status == 200) {
          ++ok;
          std::lock_guard<std::mutex> lock(seen_mu);
          seen.insert(Json::parse(r.body)["model_version"].get<std::string>());
        } else {
          ++failed;
          ADD_FAILURE() << r.status << " " << r.body;
        }
        if (i > 2000) break;
      }
    });
  }
  // Each switch waits for some requests to complete under the previous default, so switches
  // and requests interleave however the threads are scheduled.
  for (int round = 0; round < 20; ++round) {
    const int target = ok.load() + 10;
    while (ok.load() < target && failed.load() == 0) std::this_thread::yield();
    ASSERT_TRUE(b->SetDefaultVersion("risk", round % 2 == 0 ? "2" : "1").ok());
    if (round == 10) {
      ASSERT_TRUE(b->LoadVersion("risk", "1", kDir + "/risk_mlp_v1_retrained.pt").ok());
    }
  }
  stop = true;
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_GE(ok.load(), 200);
  EXPECT_THAT(seen, Contains("1"));
  EXPECT_THAT(seen, Contains("2"));
  EXPECT_EQ(b->SetDefaultVersion("risk", "9").code(), absl::StatusCode::kNotFound);
}

TEST(BackendTest, AnswersBadRequestsWithTheRightStatus) {
  GatedStore features;
  auto b = Make({Risk(), Text()}, &features);
  ASSERT_NE(b, nullptr);
  InferResult r = Call(*b, "nope", "", RiskBody({"1"}));
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(r.body, HasSubstr("the backend serves: risk, text"));
  r = Call(*b, "risk", "7", RiskBody({"1"}));
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(r.body, HasSubstr("has no version \\\"7\\\"; loaded: 1, 2"));
  r = Call(*b, "risk", "", "{not json");
  EXPECT_EQ(r.status, 400);
  r = Call(*b, "risk", "", RiskBody({"missing"}));
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(r.body, HasSubstr("feature lookup for \\\"user:missing\\\""));
  r = Call(*b, "text", "", TextBody(1, 4, 1));
  EXPECT_EQ(r.status, 200);
  // Wrong input for the model: the model's own message, as 400.
  r = Call(*b, "text", "",
           R"({"inputs":[{"name":"ids","shape":[1,2],"datatype":"FP32","data":[1,2]}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("model_error"));
  // Past its deadline before a worker took it: 504, not run.
  r = Call(*b, "text", "", TextBody(1, 4, 1), MonoTime{} + std::chrono::nanoseconds(1));
  EXPECT_EQ(r.status, 504);
  EXPECT_EQ(b->Status()[1].expired, 1u);
}

TEST(BackendTest, ProfilesTheSampledFractionPerSubmoduleAndOperator) {
  ModelConfig text = Text();
  text.profile_sample_rate = 0.25;
  auto b = Make({text}, nullptr);
  ASSERT_NE(b, nullptr);
  int with_layers = 0;
  for (int i = 0; i < 8; ++i) {
    const InferResult r = Call(*b, "text", "", TextBody(1, 16, i));
    ASSERT_EQ(r.status, 200);
    with_layers += r.server_timing.find("layer_") != std::string::npos;
    EXPECT_EQ(r.batch_rows, 1);
    // The structured timings are what the header says, in order, submodules after the stages.
    ASSERT_GE(r.timings.size(), 4u);
    EXPECT_EQ(r.timings[0].name, "queue");
    EXPECT_EQ(r.timings[2].name, "infer");
    EXPECT_GT(r.timings[2].duration, Duration(0));
    std::string names;
    for (const TimedStage& t : r.timings) names += t.name + ";dur=,";
    size_t layers = 0;
    for (const TimedStage& t : r.timings) layers += t.name.starts_with("layer_");
    EXPECT_EQ(layers > 0, r.server_timing.find("layer_") != std::string::npos);
    if (layers > 0) {
      EXPECT_THAT(names, HasSubstr("layer_encoder_0;"));
      EXPECT_THAT(r.server_timing, HasSubstr("layer_encoder_0;dur="));
    }
  }
  EXPECT_EQ(with_layers, 2);
  const VersionStatus v = b->Status()[0].versions[0];
  EXPECT_EQ(v.profiled, 2u);
  EXPECT_THAT(v.layer_ns, Contains(Key("embed")));
  EXPECT_THAT(v.layer_ns, Contains(Key("encoder.0")));
  EXPECT_THAT(v.layer_ns, Contains(Key("encoder.1")));
  EXPECT_THAT(v.layer_ns, Contains(Key("head")));
  EXPECT_THAT(v.op_ns, Contains(Key("aten::embedding")));
  const Json status = Json::parse(b->StatusJson());
  EXPECT_GT(status["models"][0]["versions"][0]["layer_seconds"]["head"].get<double>(), 0);
}

TEST(BackendTest, TheFingerprintTellsAChangedGraphFromRetrainedWeights) {
  auto v1 = TorchModel::Load(kDir + "/risk_mlp_v1.pt");
  auto retrained = TorchModel::Load(kDir + "/risk_mlp_v1_retrained.pt");
  auto v2 = TorchModel::Load(kDir + "/risk_mlp_v2.pt");
  ASSERT_TRUE(v1.ok() && retrained.ok() && v2.ok());
  EXPECT_EQ((*v1)->fingerprint().size(), 16u);
  EXPECT_EQ((*v1)->fingerprint(), (*retrained)->fingerprint());
  EXPECT_NE((*v1)->fingerprint(), (*v2)->fingerprint());
  EXPECT_GT((*v2)->parameters(), (*v1)->parameters());
}

TEST(BackendTest, CreateNamesWhatCannotBeLoaded) {
  ModelConfig bad = Text();
  bad.versions = {{"1", kDir + "/no_such_model.pt"}};
  absl::StatusOr<std::unique_ptr<ModelBackend>> b = ModelBackend::Create({bad}, {});
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("model \"text\" version \"1\""));
  EXPECT_THAT(b.status().message(), HasSubstr("no_such_model.pt"));
  b = ModelBackend::Create({Risk()}, {});
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("no feature store is configured"));
  ModelConfig dflt = Text();
  dflt.default_version = "3";
  b = ModelBackend::Create({dflt}, {});
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("default_version \"3\""));
}

TEST(BackendTest, StopAnswersQueuedRequests503) {
  GatedStore features;
  auto b = Make({Risk()}, &features);
  features.Close();
  std::promise<InferResult> first, second;
  b->Submit("risk", "", RiskBody({"1"}), {}, [&](InferResult r) { first.set_value(r); });
  features.WaitEntered(1);
  b->Submit("risk", "", RiskBody({"2"}), {}, [&](InferResult r) { second.set_value(r); });
  std::thread stopper([&] { b->Stop(); });
  EXPECT_EQ(second.get_future().get().status, 503);
  features.Open();
  EXPECT_EQ(first.get_future().get().status, 200);  // the pass in progress finishes
  stopper.join();
  EXPECT_EQ(Call(*b, "risk", "", RiskBody({"3"})).status, 503);
}

}  // namespace
}  // namespace tailguard::model
