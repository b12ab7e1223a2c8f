// Scenario files: every pattern and override parses, and every mistake is reported as
// "file:line: field.path: problem".
#include "loadgen/scenario.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tailguard::loadgen {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ErrorOf(std::string_view yaml) {
  ScenarioOptions options;
  options.load_body_files = false;
  absl::StatusOr<Scenario> s = ParseScenario(yaml, "s.yaml", options);
  EXPECT_FALSE(s.ok()) << yaml;
  return s.ok() ? "" : std::string(s.status().message());
}

TEST(ScenarioTest, ParsesEveryPatternAndMergesRequestOverrides) {
  constexpr std::string_view kYaml = R"(
distribution: poisson
request:
  method: POST
  path: /v2/models/fraud/infer
  headers: {Content-Type: application/json, X-Team: risk}
  body: '{"inputs": []}'
phases:
  - name: warmup
    duration: 10s
    rate: 100
    distribution: constant
  - name: ramp
    duration: 30s
    ramp: {from: 100, to: "1000/s"}
  - name: steps
    steps:
      - {duration: 10s, rate: 200}
      - {duration: 5s, rate: 400}
  - name: spikes
    duration: 20s
    rate: 50
    bursts: {every: 10s, length: 1s, rate: 2000}
  - name: big-inputs
    duration: 1m
    rate: 2.5
    request:
      path: /v2/models/fraud/versions/2/infer
      headers: {X-Team: fraud, X-Test-Delay-Ms: 20}
      body: '{"inputs": [1, 2, 3]}'
)";
  absl::StatusOr<Scenario> s = ParseScenario(kYaml, "s.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->phases.size(), 5u);
  const Phase& warmup = s->phases[0];
  EXPECT_EQ(warmup.name, "warmup");
  EXPECT_EQ(warmup.distribution, Distribution::kConstant);
  EXPECT_EQ(warmup.duration(), seconds(10));
  EXPECT_DOUBLE_EQ(warmup.expected_requests(), 1000);
  EXPECT_EQ(warmup.request.method, "POST");
  EXPECT_EQ(warmup.request.path, "/v2/models/fraud/infer");
  ASSERT_EQ(warmup.request.headers.size(), 2u);

  const Phase& ramp = s->phases[1];
  EXPECT_EQ(ramp.distribution, Distribution::kPoisson);
  EXPECT_DOUBLE_EQ(ramp.expected_requests(), 550 * 30);
  EXPECT_EQ(ramp.pattern, "poisson ramp 100/s to 1000/s");

  const Phase& steps = s->phases[2];
  EXPECT_EQ(steps.duration(), seconds(15));
  EXPECT_DOUBLE_EQ(steps.expected_requests(), 2000 + 2000);

  const Phase& spikes = s->phases[3];
  EXPECT_EQ(spikes.duration(), seconds(20));
  EXPECT_DOUBLE_EQ(spikes.expected_requests(), 2 * (2000 + 9 * 50));

  const Phase& big = s->phases[4];
  EXPECT_DOUBLE_EQ(big.expected_requests(), 150);
  EXPECT_EQ(big.request.path, "/v2/models/fraud/versions/2/infer");
  EXPECT_EQ(big.request.body, R"({"inputs": [1, 2, 3]})");
  // The phase's X-Team replaces the file's; Content-Type stays; X-Test-Delay-Ms is added.
  ASSERT_EQ(big.request.headers.size(), 3u);
  EXPECT_EQ(big.request.headers[0], Header("Content-Type", "application/json"));
  EXPECT_EQ(big.request.headers[1], Header("X-Team", "fraud"));
  EXPECT_EQ(big.request.headers[2], Header("X-Test-Delay-Ms", "20"));
}

TEST(ScenarioTest, ErrorsNameFileLineFieldAndProblem) {
  EXPECT_EQ(ErrorOf("phases:\n  - duration: 10s\n    rat: 100\n"),
            "s.yaml:3: phases[0].rat: unknown field; did you mean \"rate\"? (expected one of: "
            "name, duration, rate, ramp, steps, bursts, distribution, request)");
  EXPECT_EQ(ErrorOf("phases:\n  - duration: 10s\n    rate: -5\n"),
            "s.yaml:3: phases[0].rate: must not be negative, got \"-5\"");
  EXPECT_THAT(ErrorOf("phases:\n  - duration: 10s\n    rate: fast\n"),
              StartsWith("s.yaml:3: phases[0].rate: expected a rate in requests per second"));
  EXPECT_THAT(ErrorOf("phases:\n  - rate: 10\n"),
              StartsWith("s.yaml:2: phases[0]: missing field \"duration\""));
  EXPECT_THAT(ErrorOf("phases:\n  - duration: -1s\n    rate: 10\n"),
              StartsWith("s.yaml:2: phases[0].duration: must be positive"));
  EXPECT_THAT(ErrorOf("phases:\n  - duration: 10x\n    rate: 10\n"),
              StartsWith("s.yaml:2: phases[0].duration: expected a duration like"));
  EXPECT_THAT(ErrorOf("phases:\n  - duration: 1s\n    rate: 1\n    ramp: {from: 1, to: 2}\n"),
              StartsWith("s.yaml:2: phases[0]: has more than one rate pattern"));
  EXPECT_THAT(ErrorOf("phases:\n  - name: x\n"), StartsWith("s.yaml:2: phases[0]: has no rate"));
  EXPECT_THAT(ErrorOf("phases:\n  - duration: 1s\n    steps: [{duration: 1s, rate: 1}]\n"),
              StartsWith("s.yaml:2: phases[0].duration: steps set their own durations"));
  EXPECT_THAT(ErrorOf("phases:\n  - steps:\n      - {duration: 1s}\n"),
              StartsWith("s.yaml:3: phases[0].steps[0]: a step needs both duration and rate"));
  EXPECT_THAT(ErrorOf("phases:\n  - duration: 1s\n    rate: 1\n    distribution: gauss\n"),
              StartsWith("s.yaml:4: phases[0].distribution: expected constant or poisson"));
  EXPECT_THAT(ErrorOf("phases:\n  - duration: 4s\n    bursts: {every: 1s, length: 2s, rate: 9}\n"),
              StartsWith("s.yaml:3: phases[0].bursts.length: must not be longer than every"));
  EXPECT_THAT(ErrorOf("phases:\n  - duration: 1s\n    rate: 1\n    request: {path: v2}\n"),
              HasSubstr("s.yaml:4: phases[0].request.path: \"v2\" must start with '/'"));
  EXPECT_THAT(ErrorOf("phases:\n  - duration: 1s\n    rate: 1\n    request:\n"
                      "      headers: {\"Bad Name\": x}\n"),
              HasSubstr("s.yaml:5: phases[0].request.headers.Bad Name: \"Bad Name\" is no header"));
  EXPECT_THAT(ErrorOf("request: {body: x, body_file: y}\nphases: [{duration: 1s, rate: 1}]\n"),
              StartsWith("s.yaml:1: request.body_file: give either body or body_file"));
  EXPECT_THAT(ErrorOf("request: {methd: GET}\nphases: [{duration: 1s, rate: 1}]\n"),
              StartsWith("s.yaml:1: request.methd: unknown field; did you mean \"method\"?"));
  EXPECT_THAT(ErrorOf("phase:\n  - {duration: 1s, rate: 1}\n"),
              StartsWith("s.yaml:1: phase: unknown field; did you mean \"phases\"?"));
  EXPECT_THAT(ErrorOf("phases: []\n"), StartsWith("s.yaml:1: phases: must list at least one"));
  EXPECT_THAT(ErrorOf(""), StartsWith("s.yaml:1: the scenario is empty"));
  EXPECT_THAT(ErrorOf("phases: [{duration: 1s, rate: 1}\n"), StartsWith("s.yaml:"));
  EXPECT_THAT(
      ErrorOf("phases:\n  - duration: 1h\n    bursts: {every: 1ms, length: 1ms, rate: 1}\n"),
      StartsWith("s.yaml:3: phases[0].bursts.every: is too short"));
}

TEST(ScenarioTest, BodyFilesAreReadRelativeToTheScenario) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("scenario_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "body.json") << R"({"inputs": [42]})";
  std::ofstream(dir / "s.yaml") << "phases:\n  - duration: 1s\n    rate: 5\n"
                                   "    request: {body_file: body.json}\n"
                                   "  - duration: 1s\n    rate: 5\n"
                                   "    request: {body_file: missing.json}\n";
  absl::StatusOr<Scenario> s = LoadScenario((dir / "s.yaml").string());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsNotFound(s.status()));
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("s.yaml:7: phases[1].request.body_file: cannot read"));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("missing.json"));

  std::ofstream(dir / "s.yaml") << "phases:\n  - duration: 1s\n    rate: 5\n"
                                   "    request: {body_file: body.json}\n";
  s = LoadScenario((dir / "s.yaml").string());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->phases[0].request.body, R"({"inputs": [42]})");
  std::filesystem::remove_all(dir);

  EXPECT_TRUE(absl::IsNotFound(LoadScenario("/nonexistent/s.yaml").status()));
}

TEST(ScenarioTest, TheExampleParses) {
  absl::StatusOr<Scenario> s = LoadScenario(TAILGUARD_EXAMPLES_DIR "/scenario.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GE(s->phases.size(), 3u);
}

TEST(ScenarioTest, RequestChecks) {
  EXPECT_FALSE(MethodProblem("POST").has_value());
  EXPECT_TRUE(MethodProblem("PO ST").has_value());
  EXPECT_TRUE(MethodProblem("").has_value());
  EXPECT_FALSE(PathProblem("/a?b=c").has_value());
  EXPECT_TRUE(PathProblem("/a b").has_value());
  EXPECT_FALSE(HeaderProblem("X-A", "1 2").has_value());
  EXPECT_TRUE(HeaderProblem("X-A", "1\r\nX-B: 2").has_value());
  EXPECT_TRUE(HeaderProblem("X:A", "1").has_value());
}

}  // namespace
}  // namespace tailguard::loadgen
