// Protocol introspection: the Server-Timing grammar, every traceparent rule of W3C trace context
// level 1, KServe paths and input sizes, OpenAI request bodies, and server-sent events split at
// every byte.
#include "server/protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <thread>

namespace tailguard::server {
namespace {

using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// Server-Timing

std::vector<ServerTimingMetric> Parse(std::string_view header, int* malformed = nullptr) {
  return ParseServerTiming(header, malformed);
}

TEST(ServerTimingTest, ParsesTheSpecExamples) {
  int bad = -1;
  const auto m = Parse("miss, db;dur=53, app;dur=47.2", &bad);
  EXPECT_EQ(bad, 0);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].name, "miss");
  EXPECT_FALSE(m[0].has_duration());
  EXPECT_EQ(m[1].name, "db");
  EXPECT_EQ(m[1].duration_ms, 53);
  EXPECT_EQ(m[2].name, "app");
  EXPECT_DOUBLE_EQ(m[2].duration_ms, 47.2);

  const auto c = Parse("customView, dc;desc=atl");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].description, "atl");
  const auto q = Parse(R"(cache;desc="Cache Read";dur=23.2)");
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].description, "Cache Read");
  EXPECT_DOUBLE_EQ(q[0].duration_ms, 23.2);
}

TEST(ServerTimingTest, ParamsInAnyOrderCaseInsensitiveFirstWins) {
  const auto m = Parse(R"(a;DESC=x;Dur=3;dur=4;desc="y", b;dur=1;dur=2)");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].name, "a");
  EXPECT_EQ(m[0].duration_ms, 3);
  EXPECT_EQ(m[0].description, "x");
  EXPECT_EQ(m[1].duration_ms, 1);
}

TEST(ServerTimingTest, NameKeepsItsCase) {
  const auto m = Parse("Feature-Fetch;dur=1");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].name, "Feature-Fetch");
}

TEST(ServerTimingTest, UnknownParamsAndValuelessParamsAreIgnored) {
  int bad = -1;
  const auto m = Parse("a;foo=bar;flag;dur=2;x=\"q,;\"", &bad);
  EXPECT_EQ(bad, 0);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].duration_ms, 2);
}

TEST(ServerTimingTest, QuotedStringsUnescapeAndHideDelimiters) {
  const auto m = Parse(R"(a;desc="say \"hi\", \\ back; ok";dur=1, b)");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].description, R"(say "hi", \ back; ok)");
  EXPECT_EQ(m[0].duration_ms, 1);
  EXPECT_EQ(m[1].name, "b");
  // obs-text (UTF-8) is allowed inside quotes.
  const auto u = Parse("a;desc=\"\xE7\x89\xB9\xE5\xBE\x81\"");
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].description, "\xE7\x89\xB9\xE5\xBE\x81");
}

TEST(ServerTimingTest, ToleratesWhitespaceAndEmptyElements) {
  int bad = -1;
  const auto m = Parse(" ,\t a \t; dur = 1.5 ;\tdesc = x ,, b ,", &bad);
  EXPECT_EQ(bad, 0);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].duration_ms, 1.5);
  EXPECT_EQ(m[0].description, "x");
  EXPECT_EQ(m[1].name, "b");
  EXPECT_TRUE(Parse("", &bad).empty());
  EXPECT_EQ(bad, 0);
  EXPECT_TRUE(Parse(" , ,", &bad).empty());
  EXPECT_EQ(bad, 0);
}

TEST(ServerTimingTest, DurationMustBeAFiniteNonNegativeNumber) {
  for (const char* header :
       {"a;dur=-1", "a;dur=inf", "a;dur=nan", "a;dur=1e400", "a;dur=12ms", "a;dur=", "a;dur",
        "a;dur=\"\"", "a;dur=+5", "a;dur=0x10", "a;dur=1.2.3", "a;dur=\"-3\""}) {
    int bad = -1;
    const auto m = Parse(header, &bad);
    ASSERT_EQ(m.size(), 1u) << header;
    EXPECT_FALSE(m[0].has_duration()) << header;
    EXPECT_EQ(bad, 0) << header;
  }
  const auto z = Parse("a;dur=-0");
  ASSERT_EQ(z.size(), 1u);
  EXPECT_EQ(z[0].duration_ms, 0);
  EXPECT_FALSE(std::signbit(z[0].duration_ms));
  EXPECT_EQ(Parse("a;dur=\"12.5\"")[0].duration_ms, 12.5);
  EXPECT_EQ(Parse("a;dur=1e3")[0].duration_ms, 1000);
  EXPECT_EQ(Parse("a;dur=.5")[0].duration_ms, 0.5);
}

TEST(ServerTimingTest, SkipsAndCountsMalformedMetrics) {
  struct Case {
    const char* header;
    std::vector<std::string> names;
    int malformed;
  };
  const Case cases[] = {
      {R"("quoted";dur=1, ok;dur=2)", {"ok"}, 1},
      {"a b;dur=1, c", {"c"}, 1},
      {"a;=1, c", {"c"}, 1},
      {"a;;dur=1, c", {"c"}, 1},
      {";dur=1, c", {"c"}, 1},
      {"a;dur=1 junk, c", {"c"}, 1},
      {"a;dur=1;desc=\"x\"y, c", {"c"}, 1},
      {"a;desc=\"x, y\" z, c", {"c"}, 1},  // the comma in quotes does not end the metric
      {"a;desc=\"unterminated, c;dur=1", {}, 1},
      {"a;desc=\"bad\x01"
       "control\", c",
       {"c"},
       1},
      {"a;desc=\"bad escape\\", {}, 1},
      {"a=1, b@, c;dur=x;", {}, 3},
      {"\xE7\x89\xB9;dur=1, db", {"db"}, 1},  // a name must be a token
  };
  for (const Case& c : cases) {
    int bad = -1;
    const auto m = Parse(c.header, &bad);
    std::vector<std::string> names;
    for (const auto& metric : m) names.push_back(metric.name);
    EXPECT_EQ(names, c.names) << c.header;
    EXPECT_EQ(bad, c.malformed) << c.header;
  }
}

TEST(ServerTimingTest, KeepsAtMost64Metrics) {
  std::string header;
  for (int i = 0; i < 100; ++i) header += "m" + std::to_string(i) + ";dur=1, ";
  const auto m = Parse(header);
  ASSERT_EQ(m.size(), kMaxServerTimingMetrics);
  EXPECT_EQ(m.back().name, "m63");
}

TEST(ServerTimingTest, MapsWellKnownNamesToStages) {
  const std::pair<const char*, Stage> cases[] = {
      {"feature", Stage::kFeatureFetch},
      {"FEATURES", Stage::kFeatureFetch},
      {"feature_fetch", Stage::kFeatureFetch},
      {"Feature-Fetch", Stage::kFeatureFetch},
      {"featureStore", Stage::kFeatureFetch},
      {"fetch", Stage::kFeatureFetch},
      {"pre", Stage::kPreprocess},
      {"PreProcess", Stage::kPreprocess},
      {"preprocessing", Stage::kPreprocess},
      {"infer", Stage::kInference},
      {"Inference", Stage::kInference},
      {"model", Stage::kInference},
      {"compute", Stage::kInference},
      {"post", Stage::kPostprocess},
      {"postprocess", Stage::kPostprocess},
      {"POSTPROCESSING", Stage::kPostprocess},
      {"queue", Stage::kQueue},
      {"Queue-Wait", Stage::kQueue},
      {"queuing", Stage::kQueue},
  };
  for (const auto& [name, stage] : cases) EXPECT_EQ(StageForServerTiming(name), stage) << name;
  for (const char* name : {"", "db", "cache", "total", "features_", "pre process",
                           "postprocessingpostprocessing", "inference\n"}) {
    EXPECT_EQ(StageForServerTiming(name), std::nullopt) << name;
  }
}

TEST(ServerTimingTest, SanitizesStageNames) {
  EXPECT_EQ(SanitizeStageName("Feature Fetch"), "feature_fetch");
  EXPECT_EQ(SanitizeStageName("--db.query--"), "db_query");
  EXPECT_EQ(SanitizeStageName("GPU:0"), "gpu_0");
  EXPECT_EQ(SanitizeStageName("a__b"), "a_b");
  EXPECT_EQ(SanitizeStageName("0day"), "0day");
  EXPECT_EQ(SanitizeStageName(""), "");
  EXPECT_EQ(SanitizeStageName("!!!"), "");
  EXPECT_EQ(SanitizeStageName("\xE7\x89\xB9\xE5\xBE\x81"), "");
  EXPECT_EQ(SanitizeStageName("redis\xE7\x89\xB9get"), "redis_get");
  EXPECT_EQ(SanitizeStageName(std::string(40, 'X')), std::string(32, 'x'));
  // Cut at 32 where the 32nd character would be a separator: no trailing '_'.
  const std::string cut = SanitizeStageName(std::string(31, 'a') + "-bbbb");
  EXPECT_EQ(cut, std::string(31, 'a'));
  for (std::string_view s : {"Feature Fetch", "--x--y--", "ABC_def-123", ""}) {
    const std::string once = SanitizeStageName(s);
    EXPECT_EQ(SanitizeStageName(once), once);
  }
}

// ---------------------------------------------------------------------------------------------
// Trace context

constexpr std::string_view kTraceId = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr std::string_view kSpanId = "00f067aa0ba902b7";
const std::string kValid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceparentTest, ParsesTheSpecExample) {
  const std::optional<TraceContext> c = ParseTraceparent(kValid);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->TraceIdHex(), kTraceId);
  EXPECT_EQ(c->SpanIdHex(), kSpanId);
  EXPECT_EQ(c->flags, 1);
  EXPECT_TRUE(c->sampled());
  EXPECT_EQ(c->trace_id[0], 0x4b);
  EXPECT_EQ(c->span_id[7], 0xb7);
  EXPECT_EQ(FormatTraceparent(*c), kValid);
}

TEST(TraceparentTest, KeepsAllFlagBits) {
  const auto unsampled =
      ParseTraceparent("00-" + std::string(kTraceId) + "-" + std::string(kSpanId) + "-00");
  ASSERT_TRUE(unsampled.has_value());
  EXPECT_FALSE(unsampled->sampled());
  const std::string odd = "00-" + std::string(kTraceId) + "-" + std::string(kSpanId) + "-09";
  const auto c = ParseTraceparent(odd);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->flags, 0x09);
  EXPECT_TRUE(c->sampled());
  EXPECT_EQ(FormatTraceparent(*c), odd);
}

TEST(TraceparentTest, IgnoresSurroundingWhitespace) {
  EXPECT_TRUE(ParseTraceparent(" \t" + kValid + "\t ").has_value());
  EXPECT_FALSE(ParseTraceparent(kValid + "\n").has_value());
}

// Replaces `n` characters at `pos` of the valid header.
std::string Edit(size_t pos, std::string_view with, size_t n = std::string::npos) {
  std::string s = kValid;
  s.replace(pos, n == std::string::npos ? with.size() : n, with);
  return s;
}

TEST(TraceparentTest, RejectsEveryMalformedVersion00Header) {
  const std::string cases[] = {
      "",
      kValid.substr(0, 54),                      // too short
      kValid + "-",                              // version 00 is exactly 55 characters
      kValid + "-what-the-future-will-be-like",  // ... even with a valid-looking suffix
      kValid + ".",
      Edit(0, "ff"),                   // version ff is forbidden
      Edit(0, "0A"),                   // uppercase
      Edit(0, "0x"),                   // not hex
      Edit(3, "4BF92F"),               // uppercase trace-id
      Edit(36, "00F067"),              // uppercase parent-id
      Edit(53, "0A"),                  // uppercase flags
      Edit(53, "0g"),                  // non-hex flags
      Edit(10, "z"),                   // non-hex trace-id
      Edit(40, " "),                   // space inside parent-id
      Edit(3, std::string(32, '0')),   // all-zero trace-id
      Edit(36, std::string(16, '0')),  // all-zero parent-id
      Edit(2, "_"),                    // wrong delimiters
      Edit(35, "_"),
      Edit(52, "_"),
      Edit(3, "4bf92f3577b34da6a3ce929d0e0e473", 32),    // trace-id one digit short
      Edit(36, "00f067aa0ba902b", 16),                   // parent-id one digit short
      Edit(53, "1", 2),                                  // one flags digit
      Edit(53, "011", 2),                                // three flags digits
      Edit(3, "4bf92f3577b34da6a3ce929d0e0e47366", 32),  // trace-id one digit long
      "00-" + std::string(kTraceId) + "--" + std::string(kSpanId) + "-1",
  };
  for (const std::string& c : cases) EXPECT_FALSE(ParseTraceparent(c).has_value()) << c;
}

TEST(TraceparentTest, AcceptsFutureVersionsWithAValidPrefix) {
  const std::string body = kValid.substr(2);  // "-<trace>-<parent>-01"
  for (const std::string& ok : {"cc" + body, "01" + body, "fe" + body,
                                "cc" + body + "-what-the-future-will-be-like", "cc" + body + "-"}) {
    const std::optional<TraceContext> c = ParseTraceparent(ok);
    ASSERT_TRUE(c.has_value()) << ok;
    EXPECT_EQ(c->TraceIdHex(), kTraceId);
    EXPECT_EQ(FormatTraceparent(*c), kValid) << "formats as version 00";
  }
  for (const std::string& bad :
       {"cc" + body + ".what-the-future-will-be-like", "cc" + body + "1", "cc" + body.substr(1),
        "cC" + body, "ff" + body + "-future", "cc" + Edit(3, std::string(32, '0')).substr(2),
        "cc" + Edit(53, "0G").substr(2)}) {
    EXPECT_FALSE(ParseTraceparent(bad).has_value()) << bad;
  }
}

TEST(TraceparentTest, NewIdsAreNonZeroAndDistinct) {
  std::set<std::string> traces;
  std::set<std::string> spans;
  for (int i = 0; i < 10000; ++i) {
    TraceContext c;
    c.trace_id = NewTraceId();
    c.span_id = NewSpanId();
    ASSERT_TRUE(traces.insert(c.TraceIdHex()).second);
    ASSERT_TRUE(spans.insert(c.SpanIdHex()).second);
    const std::optional<TraceContext> back = ParseTraceparent(FormatTraceparent(c));
    ASSERT_TRUE(back.has_value());  // never all-zero
    ASSERT_EQ(*back, c);
  }
}

TEST(TraceparentTest, ThreadsDrawDifferentIds) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 2000;
  std::vector<std::vector<std::array<uint8_t, 16>>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&ids, t] {
      for (int i = 0; i < kPerThread; ++i) ids[t].push_back(NewTraceId());
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<std::array<uint8_t, 16>> all;
  for (const auto& v : ids) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), size_t{kThreads} * kPerThread);
}

TEST(TraceparentTest, HexEncodesLowercase) {
  const uint8_t bytes[] = {0x00, 0x0f, 0xab, 0xff};
  EXPECT_EQ(HexEncode(bytes), "000fabff");
  EXPECT_EQ(HexEncode({}), "");
}

// ---------------------------------------------------------------------------------------------
// KServe paths

TEST(KServePathTest, ParsesModelVersionAndVerb) {
  struct Case {
    const char* path;
    const char* model;
    const char* version;
    const char* verb;
  };
  const Case cases[] = {
      {"/v2/models/resnet", "resnet", "", ""},
      {"/v2/models/resnet/infer", "resnet", "", "infer"},
      {"/v2/models/resnet/ready", "resnet", "", "ready"},
      {"/v2/models/resnet/versions/3", "resnet", "3", ""},
      {"/v2/models/resnet/versions/3/infer", "resnet", "3", "infer"},
      {"/v2/models/resnet/versions/3/ready?verbose=1", "resnet", "3", "ready"},
      {"/v2/models/resnet/infer?a=/b/c", "resnet", "", "infer"},
      {"/v2/models/my%20model/infer", "my model", "", "infer"},
      {"/v2/models/bert%2dbase/versions/v%31", "bert-base", "v1", ""},
      {"/v2/models/versions/versions/2", "versions", "2", ""},
      {"/v2/models/infer", "infer", "", ""},
      {"/v2/models/stats/infer", "stats", "", "infer"},
      {"/v2/models/stats/versions/1", "stats", "1", ""},
  };
  for (const Case& c : cases) {
    const std::optional<KServeTarget> t = ParseKServePath(c.path);
    ASSERT_TRUE(t.has_value()) << c.path;
    EXPECT_EQ(t->model, c.model) << c.path;
    EXPECT_EQ(t->version, c.version) << c.path;
    EXPECT_EQ(t->verb, c.verb) << c.path;
  }
}

TEST(KServePathTest, RejectsOtherPaths) {
  for (const char* path : {"",
                           "/",
                           "/v2",
                           "/v2/models",
                           "/v2/models/",
                           "/v2/health/ready",
                           "/v1/models/x:predict",
                           "/v2/models//infer",
                           "/v2/models/x/",
                           "/v2/models/x/infer/",
                           "/v2/models/x/stats",
                           "/v2/models/stats",
                           "/v2/models/stats?format=json",
                           "/v2/models/x/config",
                           "/v2/models/x/generate",
                           "/v2/models/x/versions//infer",
                           "/v2/models/x/versions/1/infer/extra",
                           "/v2/models/x/versions/1/stats",
                           "/v2/models/x/y",
                           "/v2/models/x%2Fy/infer",
                           "/v2/models/x%0a/infer",
                           "/v2/models/x%7F",
                           "/v2/models/x%zz",
                           "/v2/models/x%4",
                           "/v2/models/x%",
                           "/v2/models/../infer",
                           "/v2/models/%2e/infer",
                           "/v2/models/%00",
                           "/V2/models/x",
                           "v2/models/x",
                           "/v2/models/?x",
                           "/v2/models/x\x01y"}) {
    EXPECT_FALSE(ParseKServePath(path).has_value()) << path;
  }
}

TEST(KServePathTest, VerbDoesNotPointIntoThePath) {
  std::optional<KServeTarget> t;
  {
    std::string path = "/v2/models/m/infer";
    t = ParseKServePath(path);
    path.assign(path.size(), 'x');
  }
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->verb, "infer");
}

// ---------------------------------------------------------------------------------------------
// KServe input size

std::string ErrorOf(const absl::Status& s) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

std::optional<uint64_t> Size(std::string_view body,
                             std::optional<size_t> json_header_length = std::nullopt) {
  absl::StatusOr<uint64_t> n = KServeInputSize(body, json_header_length);
  EXPECT_TRUE(n.ok()) << n.status() << " for " << body;
  if (!n.ok()) return std::nullopt;
  return *n;
}

std::string KServeError(std::string_view body) {
  absl::StatusOr<uint64_t> n = KServeInputSize(body);
  if (n.ok()) return "OK " + std::to_string(*n);
  return ErrorOf(n.status());
}

TEST(KServeInputSizeTest, SumsShapeProducts) {
  EXPECT_EQ(Size(R"({"id":"1","inputs":[
      {"name":"x","shape":[2,3],"datatype":"FP32","data":[1,2,3,4,5,6]},
      {"name":"y","shape":[4],"datatype":"INT64","data":[[1,2],[3,4]]}],
      "outputs":[{"name":"out","shape":"ignored"}],
      "parameters":{"shape":"ignored","inputs":5}})"),
            10u);
  EXPECT_EQ(Size(R"({"inputs":[{"shape":[]}]})"), 1u);  // a scalar
  EXPECT_EQ(Size(R"({"inputs":[]})"), 0u);
  EXPECT_EQ(Size(R"({"inputs":[{"shape":[3,0,5]}]})"), 0u);
  // "-0" is zero (found by inference_body_fuzz: the fuzzer's reference had refused it).
  EXPECT_EQ(Size(R"({"inputs":[{"shape":[2,-0]},{"shape":[3]}]})"), 3u);
  EXPECT_EQ(Size(R"( {"inputs" : [ {"shape" : [ 1 , 224 , 224 , 3 ] } ] } )"), 150528u);
  // (2^32 - 1)(2^32 + 1) = 2^64 - 1 just fits.
  EXPECT_EQ(Size(R"({"inputs":[{"shape":[4294967295,4294967297]}]})"), UINT64_MAX);
  // A zero dimension makes the product 0 even where the others overflow.
  EXPECT_EQ(Size(R"({"inputs":[{"shape":[4294967296,4294967296,0]}]})"), 0u);
  // Duplicate keys outside the schema are fine.
  EXPECT_EQ(Size(R"({"a":1,"a":2,"inputs":[{"shape":[2],"b":[],"b":{}}]})"), 2u);
}

TEST(KServeInputSizeTest, ReadsOnlyTheJsonHeaderOfBinaryRequests) {
  const std::string json = R"({"inputs":[{"name":"x","shape":[2,2],"datatype":"FP32",)"
                           R"("parameters":{"binary_data_size":16}}]})";
  static constexpr char kBinary[] = "\x00\x00\x80\x3f{{{{not json\xff\xfe";
  std::string body = json + std::string(kBinary, sizeof(kBinary) - 1);  // without the NUL
  EXPECT_EQ(Size(body, json.size()), 4u);
  EXPECT_THAT(KServeError(body), HasSubstr("malformed JSON"));
  EXPECT_THAT(ErrorOf(KServeInputSize(body, body.size() + 1).status()),
              HasSubstr("beyond the body"));
  EXPECT_THAT(ErrorOf(KServeInputSize(body, json.size() - 1).status()),
              HasSubstr("malformed JSON"));
  EXPECT_THAT(ErrorOf(KServeInputSize(body, 0).status()), HasSubstr("malformed JSON"));
}

TEST(KServeInputSizeTest, ExplainsBadBodies) {
  const std::pair<std::string_view, const char*> cases[] = {
      {"", "malformed JSON at byte 1"},
      {"{", "malformed JSON"},
      {R"({"inputs":[]} x)", "malformed JSON"},
      {R"({"inputs":[],})", "malformed JSON"},
      {"[]", "request body must be a JSON object"},
      {std::string_view("{\"inputs\":[]}\0", 14), "malformed JSON at byte 14: NUL"},
      {"42", "request body must be a JSON object"},
      {"{}", "request body has no inputs"},
      {R"({"inputs":{}})", "inputs must be an array"},
      {R"({"inputs":[],"inputs":[]})", "request body has a duplicate inputs"},
      {R"({"inputs":[1]})", "inputs[0] must be an object"},
      {R"({"inputs":[{"shape":[1]},{"name":"y"}]})", "inputs[1] has no shape"},
      {R"({"inputs":[{"shape":[1],"shape":[2]}]})", "inputs[0] has a duplicate shape"},
      // Found by inference_body_fuzz: the stream rejects the first of two values, so the error
      // names it rather than the duplicate that a document parser would keep.
      {R"({"inputs":[{"shape":"mask","shape":[]}]})",
       "inputs[0].shape must be an array of integers"},
      {R"({"inputs":[{"shape":"2x3"}]})", "inputs[0].shape must be an array of integers"},
      {R"({"inputs":[{"shape":null}]})", "inputs[0].shape must be an array of integers"},
      {R"({"inputs":[{"shape":[2,-3]}]})", "inputs[0].shape[1] is negative: -3"},
      {R"({"inputs":[{"shape":[2.5]}]})", "inputs[0].shape[0] must be a non-negative integer"},
      {R"({"inputs":[{"shape":[2.0]}]})", "inputs[0].shape[0] must be a non-negative integer"},
      {R"({"inputs":[{"shape":["2"]}]})", "inputs[0].shape[0] must be a non-negative integer"},
      {R"({"inputs":[{"shape":[[2]]}]})", "inputs[0].shape[0] must be a non-negative integer"},
      {R"({"inputs":[{"shape":[18446744073709551616]}]})",
       "inputs[0].shape[0] must be a non-negative integer"},
      {R"({"inputs":[{"shape":[1]},{"shape":[4294967296,4294967296]}]})",
       "inputs[1].shape has a product above 2^64 - 1"},
      {R"({"inputs":[{"shape":[9223372036854775808]},{"shape":[9223372036854775808]}]})",
       "inputs[1] makes the input size overflow 64 bits"},
      {R"({"inputs":[{"shape":[1e999]}]})", "malformed JSON"},
  };
  for (const auto& [body, error] : cases) EXPECT_THAT(KServeError(body), HasSubstr(error)) << body;
}

// Nesting `depth` arrays deep inside an ignored field of a valid request.
std::string Nested(int depth) {
  return R"({"inputs":[],"x":)" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
}

TEST(KServeInputSizeTest, LimitsNesting) {
  EXPECT_EQ(Size(Nested(kMaxJsonDepth)), 0u);
  EXPECT_THAT(KServeError(Nested(kMaxJsonDepth + 1)), HasSubstr("nests deeper than 64 levels"));
  // A bracket bomb is rejected quickly and without recursion.
  EXPECT_THAT(KServeError("{\"x\":" + std::string(1 << 20, '[')), HasSubstr("nests deeper"));
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  EXPECT_THAT(KServeError(objects), HasSubstr("nests deeper"));
}

TEST(KServeInputSizeTest, ErrorMessagesArePrintableAscii) {
  for (std::string_view body :
       {std::string_view("{\"inputs\xff\xfe\":[]}"), std::string_view("{\"a\":\"\x01\"}"),
        std::string_view("{\"a\":tru\xe7\x89\xb9}")}) {
    const std::string message = KServeError(body);
    EXPECT_THAT(message, HasSubstr("malformed JSON"));
    EXPECT_LE(message.size(), 200u);
    for (char c : message) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << message;
  }
}

// ---------------------------------------------------------------------------------------------
// OpenAI requests

OpenAIRequest Inspect(std::string_view body, bool chat) {
  absl::StatusOr<OpenAIRequest> r = InspectOpenAIRequest(body, chat);
  EXPECT_TRUE(r.ok()) << r.status() << " for " << body;
  return r.value_or(OpenAIRequest{});
}

std::string OpenAIError(std::string_view body, bool chat) {
  absl::StatusOr<OpenAIRequest> r = InspectOpenAIRequest(body, chat);
  if (r.ok()) return "OK";
  return ErrorOf(r.status());
}

TEST(OpenAIRequestTest, CompletionPrompts) {
  OpenAIRequest r = Inspect(R"({"model":"llama-3","prompt":"hello","stream":true})", false);
  EXPECT_EQ(r.model, "llama-3");
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.prompt_chars, 5u);
  // Code points, not bytes; escapes count as what they decode to.
  EXPECT_EQ(Inspect("{\"prompt\":\"h\xC3\xA9llo \xE4\xB8\x96\xE7\x95\x8C\xF0\x9F\x98\x80\"}", false)
                .prompt_chars,
            9u);
  EXPECT_EQ(Inspect(R"({"prompt":"\u00e9\n\ud83d\ude00"})", false).prompt_chars, 3u);
  EXPECT_EQ(Inspect(R"({"prompt":["ab","cde"]})", false).prompt_chars, 5u);
  EXPECT_EQ(Inspect(R"({"prompt":[1,2,3]})", false).prompt_chars, 3u);  // token ids count 1
  EXPECT_EQ(Inspect(R"({"prompt":[[1,2],[3],[]]})", false).prompt_chars, 3u);
  EXPECT_EQ(Inspect(R"({"prompt":""})", false).prompt_chars, 0u);
  r = Inspect(R"({"prompt":"x","stream":null,"messages":5,"max_tokens":7})", false);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.model, "");
}

TEST(OpenAIRequestTest, ChatMessages) {
  const OpenAIRequest r = Inspect(R"({
      "model": "qwen", "stream": false, "prompt": 5,
      "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [
          {"type": "text", "text": "what is"},
          {"type": "image_url", "image_url": {"url": "data:..."}},
          {"type": "text", "text": "this?"}]},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "1"}]},
        {"role": "tool", "name": "x"}]})",
                                  true);
  EXPECT_EQ(r.model, "qwen");
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.prompt_chars, 8u + 7u + 5u);
  EXPECT_EQ(Inspect(R"({"messages":[]})", true).prompt_chars, 0u);
}

TEST(OpenAIRequestTest, ExplainsBadBodies) {
  struct Case {
    const char* body;
    bool chat;
    const char* error;
  };
  const Case cases[] = {
      {"", false, "malformed JSON"},
      {"{\"prompt\":\"x\"", false, "malformed JSON"},
      {"{\"prompt\":\"\xff\"}", false, "malformed JSON"},  // invalid UTF-8
      {"[]", true, "request body must be a JSON object"},
      {"{}", false, "request body has no prompt"},
      {R"({"messages":[]})", false, "request body has no prompt"},
      {"{}", true, "request body has no messages"},
      {R"({"prompt":null})", false, "prompt must be a string"},
      {R"({"prompt":{}})", false, "prompt must be a string"},
      {R"({"prompt":[true]})", false, "prompt[0] must be a string, a token id"},
      {R"({"prompt":[-1]})", false, "prompt[0] must be a string, a token id"},
      {R"({"prompt":[[1,"a"]]})", false, "prompt[0][1] must be a token id"},
      {R"({"prompt":[[1.5]]})", false, "prompt[0][0] must be a token id"},
      {R"({"prompt":"x","stream":"yes"})", false, "stream must be a boolean"},
      {R"({"prompt":"x","model":7})", false, "model must be a string"},
      {R"({"prompt":"x","prompt":"y"})", false, "request body has a duplicate prompt"},
      {R"({"messages":{}})", true, "messages must be an array"},
      {R"({"messages":["hi"]})", true, "messages[0] must be an object"},
      {R"({"messages":[{"content":"a"},{"content":5}]})", true,
       "messages[1].content must be a string, an array of parts, or null"},
      {R"({"messages":[{"content":["a"]}]})", true, "messages[0].content[0] must be an object"},
      {R"({"messages":[{"content":[{"text":1}]}]})", true,
       "messages[0].content[0].text must be a string"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(OpenAIError(c.body, c.chat), HasSubstr(c.error)) << c.body;
  }
}

TEST(OpenAIRequestTest, LimitsNesting) {
  const std::string deep =
      R"({"prompt":"x","extra":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_THAT(OpenAIError(deep, false), HasSubstr("nests deeper than 64 levels"));
}

// ---------------------------------------------------------------------------------------------
// Server-sent events

struct SseResult {
  uint64_t events;
  bool done;
};

SseResult ScanWhole(std::string_view stream) {
  SseScanner s;
  const size_t n = s.Feed(stream);
  EXPECT_EQ(n, s.events());
  return {s.events(), s.done()};
}

// Feeds one byte at a time; checks that Feed()'s results add up.
SseResult ScanBytes(std::string_view stream) {
  SseScanner s;
  uint64_t sum = 0;
  for (char c : stream) sum += s.Feed(std::string_view(&c, 1));
  EXPECT_EQ(sum, s.events());
  return {s.events(), s.done()};
}

void ExpectEvents(std::string_view stream, uint64_t events, bool done) {
  SCOPED_TRACE(testing::Message() << "stream: " << testing::PrintToString(std::string(stream)));
  const SseResult whole = ScanWhole(stream);
  EXPECT_EQ(whole.events, events);
  EXPECT_EQ(whole.done, done);
  const SseResult bytes = ScanBytes(stream);
  EXPECT_EQ(bytes.events, events);
  EXPECT_EQ(bytes.done, done);
  for (size_t split = 0; split <= stream.size(); ++split) {
    SseScanner s;
    const size_t n = s.Feed(stream.substr(0, split)) + s.Feed(stream.substr(split));
    ASSERT_EQ(n, events) << "split at " << split;
    ASSERT_EQ(s.done(), done) << "split at " << split;
  }
}

TEST(SseScannerTest, CountsAnOpenAIStream) {
  ExpectEvents(
      "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n"
      "data: [DONE]\n\n",
      2, true);
}

TEST(SseScannerTest, ReturnsEventsAsTheyComplete) {
  SseScanner s;
  EXPECT_EQ(s.Feed("data: a\n"), 0u);
  EXPECT_EQ(s.Feed("\n"), 1u);
  EXPECT_EQ(s.Feed("data: b\n\ndata: c\n\ndata: d"), 2u);
  EXPECT_EQ(s.Feed("\n"), 0u);
  EXPECT_FALSE(s.done());
  EXPECT_EQ(s.Feed("\ndata: [DONE]\n"), 1u);
  EXPECT_FALSE(s.done());
  EXPECT_EQ(s.Feed("\n"), 0u);
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.events(), 4u);
}

TEST(SseScannerTest, AcceptsEveryLineEnding) {
  ExpectEvents("data: a\n\n", 1, false);
  ExpectEvents("data: a\r\n\r\n", 1, false);
  ExpectEvents("data: a\r\r", 1, false);
  ExpectEvents("data: a\r\n\n", 1, false);
  ExpectEvents("data: a\n\r\n", 1, false);
  ExpectEvents("data: a\r\ndata: b\r\n\r\ndata: c\r\rdata: d\n\n", 3, false);
  // CRLF is one line end: no blank line here.
  ExpectEvents("data: a\r\ndata: b\r\n", 0, false);
  ExpectEvents("data: [DONE]\r\n\r\n", 0, true);
  ExpectEvents("data: [DONE]\r\r", 0, true);
}

TEST(SseScannerTest, CrLfSplitAcrossChunksIsOneLineEnd) {
  SseScanner s;
  EXPECT_EQ(s.Feed("data: a\r"), 0u);
  EXPECT_EQ(s.Feed("\n"), 0u);  // not a blank line
  EXPECT_EQ(s.Feed("data: b\r"), 0u);
  EXPECT_EQ(s.Feed("\n\r"), 1u);
  EXPECT_EQ(s.Feed("\n"), 0u);
  EXPECT_EQ(s.events(), 1u);
}

TEST(SseScannerTest, OnlyDataEventsCount) {
  ExpectEvents(": keep-alive\n\n", 0, false);
  ExpectEvents(":\n\n", 0, false);
  ExpectEvents("event: ping\n\n", 0, false);
  ExpectEvents("id: 7\nretry: 1000\n\n", 0, false);
  ExpectEvents("id: 7\nevent: token\ndata: x\n\n", 1, false);
  ExpectEvents(": comment\ndata: x\n: another\n\n", 1, false);
  ExpectEvents("data\n\n", 1, false);  // a field name alone has an empty value
  ExpectEvents("data:\n\n", 1, false);
  ExpectEvents("data: \n\n", 1, false);
  ExpectEvents("datax: y\n\n", 0, false);
  ExpectEvents("dat: y\n\n", 0, false);
  ExpectEvents("Data: y\n\n", 0, false);  // field names are case-sensitive
  ExpectEvents(" data: y\n\n", 0, false);
  ExpectEvents("data: a\ndata: b\ndata: c\n\n", 1, false);  // one event, three lines
  ExpectEvents("\n\n\n\n", 0, false);
  ExpectEvents("", 0, false);
}

TEST(SseScannerTest, RecognisesOnlyAnExactDoneMarker) {
  ExpectEvents("data: [DONE]\n\n", 0, true);
  ExpectEvents("data:[DONE]\n\n", 0, true);
  ExpectEvents("event: end\ndata: [DONE]\nid: 9\n\n", 0, true);
  ExpectEvents("data:  [DONE]\n\n", 1, false);
  ExpectEvents("data: [DONE] \n\n", 1, false);
  ExpectEvents("data: [DONE]x\n\n", 1, false);
  ExpectEvents("data: [DON]\n\n", 1, false);
  ExpectEvents("data: [done]\n\n", 1, false);
  ExpectEvents("data: [DONE]\ndata: more\n\n", 1, false);
  ExpectEvents("data: more\ndata: [DONE]\n\n", 1, false);
  ExpectEvents(": [DONE]\n\n", 0, false);
  ExpectEvents("data: [DONE]\n", 0, false);  // not dispatched yet
  ExpectEvents("data: [DONE]\n\ndata: late\n\n", 1, true);
}

TEST(SseScannerTest, UnfinishedEventDoesNotCount) {
  ExpectEvents("data: a\n\ndata: b", 1, false);
  ExpectEvents("data: a\n\ndata: b\n", 1, false);
}

TEST(SseScannerTest, SkipsALeadingByteOrderMark) {
  ExpectEvents(
      "\xEF\xBB\xBF"
      "data: a\n\n",
      1, false);
  ExpectEvents("\xEF\xBB\xBF\n\ndata: a\n\n", 1, false);
  // Only at the start of the stream, and only a whole one.
  ExpectEvents(
      "\xEF\xBB"
      "data: a\n\n",
      0, false);
  ExpectEvents("\xEF\n\ndata: a\n\n", 1, false);
  ExpectEvents(
      "data: a\n\n\xEF\xBB\xBF"
      "data: b\n\n",
      1, false);
}

TEST(SseScannerTest, MemoryStaysConstantForHugeEvents) {
  static_assert(sizeof(SseScanner) <= 32);
  SseScanner s;
  const std::string chunk(1 << 16, 'x');
  EXPECT_EQ(s.Feed("data: "), 0u);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(s.Feed(chunk), 0u);  // 16 MiB in one line
  EXPECT_EQ(s.Feed("\n\n"), 1u);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(s.Feed(chunk), 0u);  // a 16 MiB field name
  EXPECT_EQ(s.Feed("\n\n"), 0u);
}

TEST(NormalizeTargetTest, LeavesNormalTargetsAlone) {
  for (const char* t :
       {"/", "/a", "/a/", "/v2/models/risk/infer?x=/../y", "/a/.b/..c/...", "/%2F", "/a%2e"}) {
    absl::StatusOr<std::optional<std::string>> n = NormalizeTarget(t);
    ASSERT_TRUE(n.ok()) << t;
    EXPECT_FALSE(n->has_value()) << t << " -> " << n->value_or("");
  }
}

TEST(NormalizeTargetTest, MergesSlashesAndResolvesDotSegments) {
  const std::pair<const char*, const char*> cases[] = {
      {"//", "/"},
      {"/a//b", "/a/b"},
      {"/a/./b", "/a/b"},
      {"/a/b/../c", "/a/c"},
      {"/a/b/..", "/a/"},
      {"/a/.", "/a/"},
      {"/a/b/../../", "/"},
      {"/a/%2e/b/%2E%2e/c", "/a/c"},
      {"/fraud//etc/passwd?q=//x", "/fraud/etc/passwd?q=//x"},
      {"/./", "/"},
  };
  for (const auto& [in, out] : cases) {
    absl::StatusOr<std::optional<std::string>> n = NormalizeTarget(in);
    ASSERT_TRUE(n.ok()) << in << ": " << n.status();
    ASSERT_TRUE(n->has_value()) << in;
    EXPECT_EQ(**n, out) << in;
    // Normalising twice changes nothing more.
    EXPECT_FALSE(NormalizeTarget(**n)->has_value()) << out;
  }
}

TEST(NormalizeTargetTest, RefusesClimbingAboveTheRootAndOtherForms) {
  for (const char* t : {"/..", "/../etc/passwd", "/a/../../b", "/fraud/%2e%2e/%2E%2E/x"}) {
    absl::StatusOr<std::optional<std::string>> n = NormalizeTarget(t);
    ASSERT_FALSE(n.ok()) << t;
    EXPECT_THAT(n.status().message(), HasSubstr("above the root")) << t;
  }
  for (const char* t : {"", "*", "x/y", "ftp://host/x"}) {
    EXPECT_THAT(NormalizeTarget(t).status().message(), HasSubstr("starting with '/'")) << t;
  }
  EXPECT_FALSE(NormalizeTarget("/" + std::string(kMaxTargetBytes, 'a')).ok());
  // Path parameters after dot segments are dot segments all the same (Tomcat, Spring).
  EXPECT_THAT(NormalizeTarget("/a/..;x/..;/etc").status().message(), HasSubstr("above the root"));
  absl::StatusOr<std::optional<std::string>> n = NormalizeTarget("/fraud/..;jsessionid=1/admin");
  ASSERT_TRUE(n.ok() && n->has_value());
  EXPECT_EQ(**n, "/admin");
  // Backslashes, which some servers read as '/'.
  for (const char* t : {"/a\\..\\b", "/a/%5c..%5C/b", "/a\\b"}) {
    EXPECT_THAT(NormalizeTarget(t).status().message(), HasSubstr("backslash")) << t;
  }
}

TEST(NormalizeTargetTest, TakesTheAbsoluteForm) {
  const std::pair<const char*, const char*> cases[] = {
      {"http://gateway:8080/v2/models/risk/infer?x=1", "/v2/models/risk/infer?x=1"},
      {"HTTPS://gateway/a//b", "/a/b"},
      {"http://gateway", "/"},
      {"http://gateway?q=1", "/?q=1"},
  };
  for (const auto& [in, out] : cases) {
    absl::StatusOr<std::optional<std::string>> n = NormalizeTarget(in);
    ASSERT_TRUE(n.ok()) << in << ": " << n.status();
    ASSERT_TRUE(n->has_value()) << in;
    EXPECT_EQ(**n, out) << in;
  }
  EXPECT_FALSE(NormalizeTarget("http://gateway/../x").ok());
}

TEST(RequestFramingProblemTest, HostAndTransferEncoding) {
  EXPECT_EQ(RequestFramingProblem(11, 1, "gateway:80", 0, ""), std::nullopt);
  EXPECT_EQ(RequestFramingProblem(10, 0, "", 0, ""), std::nullopt);
  EXPECT_EQ(RequestFramingProblem(11, 1, "", 0, ""), std::nullopt);  // empty is allowed
  EXPECT_EQ(RequestFramingProblem(11, 1, "[::1]:8080", 0, ""), std::nullopt);
  EXPECT_THAT(RequestFramingProblem(11, 0, "", 0, "").value_or(""), HasSubstr("needs a Host"));
  EXPECT_THAT(RequestFramingProblem(11, 2, "a", 0, "").value_or(""), HasSubstr("more than one"));
  EXPECT_TRUE(RequestFramingProblem(11, 1, "a b", 0, "").has_value());
  EXPECT_TRUE(RequestFramingProblem(11, 1, "a/b", 0, "").has_value());
  EXPECT_TRUE(RequestFramingProblem(11, 1, "user@a", 0, "").has_value());

  for (const char* ok : {"chunked", "Chunked", " chunked\t"}) {
    EXPECT_EQ(RequestFramingProblem(11, 1, "a", 1, ok), std::nullopt) << ok;
  }
  for (const char* bad :
       {"chunked, identity", "gzip", "identity", "gzip, chunked", "chunkedx", "", "chunked;q=1"}) {
    const std::optional<std::string> p = RequestFramingProblem(11, 1, "a", 1, bad);
    ASSERT_TRUE(p.has_value()) << bad;
    EXPECT_THAT(*p, HasSubstr("only \"chunked\" alone")) << bad;
  }
  EXPECT_TRUE(RequestFramingProblem(11, 1, "a", 2, "chunked").has_value());
  EXPECT_THAT(RequestFramingProblem(10, 0, "", 1, "chunked").value_or(""), HasSubstr("HTTP/1.0"));
  // What it quotes is cut short and has no control characters.
  const std::optional<std::string> long_one =
      RequestFramingProblem(11, 1, "a", 1, std::string(500, 'x') + "\r");
  ASSERT_TRUE(long_one.has_value());
  EXPECT_LT(long_one->size(), 300u);
}

TEST(CheckRequestLabelTest, AllowsModelIdsAndRefusesTheRest) {
  for (const char* ok : {"resnet50", "bert-base-uncased@2", "meta-llama/Llama-3.1-8B-Instruct",
                         "gpt-4o:2024-05-13", "a+b_c.d"}) {
    EXPECT_EQ(CheckRequestLabel(ok), RequestLabelCheck::kOk) << ok;
  }
  EXPECT_EQ(CheckRequestLabel(""), RequestLabelCheck::kEmpty);
  EXPECT_EQ(CheckRequestLabel(std::string(kMaxRequestLabelBytes, 'a')), RequestLabelCheck::kOk);
  EXPECT_EQ(CheckRequestLabel(std::string(kMaxRequestLabelBytes + 1, 'a')),
            RequestLabelCheck::kTooLong);
  for (const char* bad : {"a b", "a\"b", "a\\b", "a\nb", "caf\xc3\xa9", "{x}", "a,b"}) {
    EXPECT_EQ(CheckRequestLabel(bad), RequestLabelCheck::kCharacters) << bad;
  }
}

}  // namespace
}  // namespace tailguard::server
