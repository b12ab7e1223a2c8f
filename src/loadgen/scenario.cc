// The scenario file parser: see scenario.h and docs/loadgen.md.
#include "loadgen/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/file.h"
#include "common/strings.h"
#include "common/yaml_fields.h"

namespace tailguard::loadgen {
namespace {

bool IsTokenChar(char c) {
  static constexpr std::string_view kPunctuation = "!#$%&'*+-.^_`|~";
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         kPunctuation.find(c) != std::string_view::npos;
}

std::string RateText(double r) { return Cat(r, "/s"); }

// `over` on top of `base`.
RequestOverrides Merge(const RequestOverrides& base, const RequestOverrides& over) {
  RequestOverrides out = base;
  if (over.method) out.method = over.method;
  if (over.path) out.path = over.path;
  if (over.body) out.body = over.body;
  MergeHeaders(out.headers, over.headers);
  return out;
}

class Parser : public YamlWalker {
 public:
  explicit Parser(const ScenarioOptions& options)
      : YamlWalker(/*suggest_names=*/true), options_(options) {}

  Scenario Parse(const YAML::Node& root) {
    const YamlItem top = Root(root);
    if (root.IsNull()) Fail(top, "the scenario is empty; it needs a list of `phases:`");
    const YamlMap m = Map(top, {"distribution", "request", "phases"});
    Distribution distribution = Distribution::kConstant;
    if (const YamlItem* d = m.Get("distribution")) distribution = Dist(*d);
    RequestOverrides defaults;
    if (const YamlItem* r = m.Get("request")) defaults = Request(*r);
    const YamlItem* phases = m.Get("phases");
    if (phases == nullptr) {
      Fail(top,
           "missing field \"phases\": a list of phases, like\n  phases:\n"
           "    - {name: warmup, duration: 10s, rate: 100}");
    }
    Scenario s;
    const std::vector<YamlItem> items = List(*phases, kMaxPhases);
    if (items.empty()) Fail(*phases, "must list at least one phase");
    for (const YamlItem& item : items) {
      s.phases.push_back(ParsePhase(item, distribution, defaults));
    }
    return s;
  }

 private:
  static Distribution Dist(const YamlItem& at) {
    const std::string s = Str(at);
    const std::optional<Distribution> d = ParseDistribution(s);
    if (!d) Fail(at, Cat("expected constant or poisson, got ", Quoted(s)));
    return *d;
  }

  // A rate in requests per second: "500", "2.5", "500/s".
  static double Rate(const YamlItem& at) {
    std::string s = Str(at);
    std::string_view v = s;
    if (v.ends_with("/s")) v.remove_suffix(2);
    double r = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), r);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || !std::isfinite(r)) {
      Fail(at,
           Cat("expected a rate in requests per second like 500 or \"500/s\", got ", Quoted(s)));
    }
    if (r < 0) Fail(at, Cat("must not be negative, got ", Quoted(s)));
    if (r > kMaxRate) Fail(at, Cat("must be at most ", kMaxRate, " requests per second"));
    return r;
  }

  static Duration Positive(const YamlItem& at) { return PositiveDur(at, "30s"); }

  RequestOverrides Request(const YamlItem& at) {
    const YamlMap m = Map(at, {"method", "path", "headers", "body", "body_file"});
    RequestOverrides r;
    if (const YamlItem* f = m.Get("method")) {
      const std::string s = Str(*f);
      if (auto problem = MethodProblem(s)) Fail(*f, *problem);
      r.method = s;
    }
    if (const YamlItem* f = m.Get("path")) {
      const std::string s = Str(*f);
      if (auto problem = PathProblem(s)) Fail(*f, *problem);
      r.path = s;
    }
    if (const YamlItem* f = m.Get("headers")) {
      for (auto& [name, value] : StringMap(*f, 256)) {
        if (auto problem = HeaderProblem(name, value)) {
          Fail(MarkOf(Cat(f->path, '.', name)), Cat(f->path, '.', name), *problem);
        }
        r.headers.emplace_back(name, value);
      }
    }
    const YamlItem* body = m.Get("body");
    const YamlItem* body_file = m.Get("body_file");
    if (body != nullptr && body_file != nullptr) {
      Fail(*body_file, "give either body or body_file, not both");
    }
    if (body != nullptr) {
      r.body = Str(*body);
      if (r.body->size() > kMaxBodyBytes) {
        Fail(*body, Cat("is ", r.body->size(), " bytes; at most ", kMaxBodyBytes, " are allowed"));
      }
    }
    if (body_file != nullptr) {
      const std::string name = Name(*body_file);
      if (options_.load_body_files) {
        std::filesystem::path p(name);
        if (p.is_relative()) p = std::filesystem::path(options_.base_dir) / p;
        absl::StatusOr<std::string> text = ReadWholeFile(p.string(), kMaxBodyBytes);
        if (!text.ok()) {
          throw BodyFileFailure{YamlFailure{
              body_file->mark, body_file->path,
              Cat("cannot read ", Quoted(p.string()), ": ", text.status().message(),
                  std::filesystem::path(name).is_relative()
                      ? " (a relative path is relative to the scenario file's directory)"
                      : "")}};
        }
        r.body = *std::move(text);
      }
    }
    return r;
  }

  Phase ParsePhase(const YamlItem& at, Distribution distribution,
                   const RequestOverrides& defaults) {
    const YamlMap m =
        Map(at, {"name", "duration", "rate", "ramp", "steps", "bursts", "distribution", "request"});
    Phase p;
    p.distribution = distribution;
    if (const YamlItem* f = m.Get("name")) p.name = Name(*f);
    if (const YamlItem* f = m.Get("distribution")) p.distribution = Dist(*f);
    const YamlItem* duration = m.Get("duration");
    const YamlItem* rate = m.Get("rate");
    const YamlItem* ramp = m.Get("ramp");
    const YamlItem* steps = m.Get("steps");
    const YamlItem* bursts = m.Get("bursts");
    const int patterns =
        (rate != nullptr || bursts != nullptr) + (ramp != nullptr) + (steps != nullptr);
    if (patterns == 0) {
      Fail(at,
           "has no rate pattern: give one of rate (constant), ramp, steps or bursts, like "
           "{duration: 30s, rate: 500}");
    }
    if (patterns > 1) {
      Fail(at,
           "has more than one rate pattern: give only one of rate (with optional bursts), "
           "ramp or steps");
    }
    const char* dist = DistributionName(p.distribution);
    if (steps != nullptr) {
      if (duration != nullptr) {
        Fail(*duration, "steps set their own durations; remove this duration");
      }
      std::vector<std::pair<Duration, double>> list;
      std::string text;
      for (const YamlItem& s : List(*steps, kMaxSegments)) {
        const YamlMap sm = Map(s, {"duration", "rate"});
        const YamlItem* d = sm.Get("duration");
        const YamlItem* r = sm.Get("rate");
        if (d == nullptr || r == nullptr) {
          Fail(s, "a step needs both duration and rate, like {duration: 10s, rate: 200}");
        }
        list.emplace_back(Positive(*d), Rate(*r));
        text += Cat(text.empty() ? "" : " ", RateText(list.back().second));
      }
      if (list.empty()) Fail(*steps, "must list at least one step");
      p.segments = StepRates(list);
      p.pattern = Cat(dist, " steps ", text);
    } else {
      if (duration == nullptr) Fail(at, "missing field \"duration\", like duration: 30s");
      const Duration d = Positive(*duration);
      if (ramp != nullptr) {
        const YamlMap rm = Map(*ramp, {"from", "to"});
        const YamlItem* from = rm.Get("from");
        const YamlItem* to = rm.Get("to");
        if (from == nullptr || to == nullptr) {
          Fail(*ramp, "a ramp needs from and to, like {from: 100, to: 1000}");
        }
        const double a = Rate(*from), b = Rate(*to);
        p.segments = RampRate(d, a, b);
        p.pattern = Cat(dist, " ramp ", RateText(a), " to ", RateText(b));
      } else if (bursts != nullptr) {
        const double base = rate != nullptr ? Rate(*rate) : 0.0;
        const YamlMap bm = Map(*bursts, {"every", "length", "rate"});
        const YamlItem* every = bm.Get("every");
        const YamlItem* length = bm.Get("length");
        const YamlItem* burst_rate = bm.Get("rate");
        if (every == nullptr || length == nullptr || burst_rate == nullptr) {
          Fail(*bursts,
               "bursts need every, length and rate, like {every: 10s, length: 1s, "
               "rate: 2000}");
        }
        const Duration e = Positive(*every);
        const Duration l = Positive(*length);
        if (l > e) Fail(*length, "must not be longer than every");
        if (d / e >= static_cast<int64_t>(kMaxSegments / 2)) {
          Fail(*every, Cat("is too short for a phase of this duration: at most ", kMaxSegments / 2,
                           " bursts per phase"));
        }
        const double br = Rate(*burst_rate);
        p.segments = BurstRate(d, base, e, l, br);
        p.pattern = Cat(dist, ' ', RateText(base), " with bursts of ", RateText(br));
      } else {
        const double r = Rate(*rate);
        p.segments = ConstantRate(d, r);
        p.pattern = Cat(dist, ' ', RateText(r));
      }
    }
    segments_ += p.segments.size();
    if (segments_ > kMaxSegments) {
      Fail(at, Cat("the scenario has more than ", kMaxSegments, " rate segments in all"));
    }
    p.request = defaults;
    if (const YamlItem* r = m.Get("request")) p.request = Merge(defaults, Request(*r));
    return p;
  }

 public:
  // A body file that cannot be read: NotFound rather than InvalidArgument.
  struct BodyFileFailure {
    YamlFailure failure;
  };

 private:
  const ScenarioOptions& options_;
  size_t segments_ = 0;
};

}  // namespace

std::optional<std::string> MethodProblem(std::string_view method) {
  if (method.empty()) return "the method is empty; use GET, POST, PUT...";
  if (method.size() > 32 || !std::all_of(method.begin(), method.end(), IsTokenChar)) {
    return Cat(Quoted(method), " is no HTTP method; use GET, POST, PUT...");
  }
  return std::nullopt;
}

std::optional<std::string> PathProblem(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return Cat(Quoted(path), " must start with '/', like \"/v2/models/m/infer\"");
  }
  if (path.size() > 8192) return "is longer than 8192 bytes";
  if (std::any_of(path.begin(), path.end(), [](char c) {
        return static_cast<unsigned char>(c) <= ' ' || c == 0x7f || c == '#';
      })) {
    return Cat(Quoted(path), " may not contain spaces, control characters or '#'");
  }
  return std::nullopt;
}

std::optional<std::string> HeaderProblem(std::string_view name, std::string_view value) {
  if (name.empty() || name.size() > 256 || !std::all_of(name.begin(), name.end(), IsTokenChar)) {
    return Cat(Quoted(name), " is no header name (letters, digits and -_. only)");
  }
  if (value.size() > 16384) return Cat("the value of ", name, " is longer than 16384 bytes");
  if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
    return Cat("the value of ", name, " contains a line break or NUL");
  }
  return std::nullopt;
}

void MergeHeaders(std::vector<Header>& base, const std::vector<Header>& add) {
  for (const Header& h : add) {
    auto it = std::find_if(base.begin(), base.end(),
                           [&](const Header& b) { return EqualsIgnoreCase(b.first, h.first); });
    if (it != base.end()) {
      it->second = h.second;
    } else {
      base.push_back(h);
    }
  }
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path, size_t max_bytes) {
  absl::StatusOr<std::string> text = ReadFileUpTo(path, max_bytes);
  if (absl::IsOutOfRange(text.status())) {
    return absl::InvalidArgumentError(Cat("it ", text.status().message()));
  }
  return text;
}

absl::StatusOr<Scenario> ParseScenario(std::string_view yaml, std::string_view file_name,
                                       const ScenarioOptions& options) {
  if (yaml.size() > kMaxScenarioBytes) {
    return absl::InvalidArgumentError(Cat(file_name, ": the file is ", yaml.size(),
                                          " bytes; a scenario may be at most ", kMaxScenarioBytes));
  }
  Parser parser(options);
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    return parser.Parse(root);
  } catch (const Parser::BodyFileFailure& f) {
    return absl::NotFoundError(YamlErrorText(file_name, f.failure));
  } catch (const YamlFailure& f) {
    return YamlErrorStatus(file_name, f);
  } catch (const YAML::Exception& e) {
    return YamlErrorStatus(file_name, YamlFailure{e.mark, "", e.msg});
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(Cat(file_name, ": cannot parse: ", e.what()));
  }
}

absl::StatusOr<Scenario> LoadScenario(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path, kMaxScenarioBytes);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        Cat(path, ": cannot read the scenario file: ", text.status().message()));
  }
  ScenarioOptions options;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  options.base_dir = dir.empty() ? "." : dir.string();
  return ParseScenario(*text, path, options);
}

}  // namespace tailguard::loadgen
