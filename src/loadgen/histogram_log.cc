// Histogram log writing and reading: see histogram_log.h.
#include "loadgen/histogram_log.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "absl/strings/escaping.h"
#include "common/strings.h"
#include "loadgen/report.h"
#include "loadgen/scenario.h"

namespace tailguard::loadgen {
namespace {

constexpr size_t kMaxLogBytes = size_t{1} << 30;

std::string Sec(double s) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9f", s);
  return buf;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

bool ParseDouble(std::string_view s, double& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(out);
}

Duration FromSeconds(double s) { return Duration(std::llround(s * 1e9)); }

}  // namespace

std::string HistogramLogHeader(WallTime start) {
  const double unix_s = static_cast<double>(start.time_since_epoch().count()) * 1e-9;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", unix_s);
  return Cat(kHistogramLogMagic, " 1\n#start ", buf,
             "\n#start_s length_s count p50_s p99_s max_s histogram\n");
}

std::string HistogramLogLine(Duration start, Duration length, const Histogram& h) {
  const auto s = [](uint64_t ns) { return Sec(static_cast<double>(ns) * 1e-9); };
  return Cat(Sec(std::chrono::duration<double>(start).count()), ' ',
             Sec(std::chrono::duration<double>(length).count()), ' ', h.count(), ' ',
             s(InterpolatedQuantile(h, 0.5)), ' ', s(InterpolatedQuantile(h, 0.99)), ' ',
             s(h.max()), ' ', absl::Base64Escape(h.Serialize()), '\n');
}

Histogram HistogramLog::Total() const {
  Histogram total;
  for (const HistogramLogInterval& i : intervals) total.Merge(i.histogram);
  return total;
}

absl::StatusOr<HistogramLog> ParseHistogramLog(std::string_view text, std::string_view file_name) {
  HistogramLog log;
  size_t line_no = 0;
  bool saw_magic = false;
  const auto fail = [&](const std::string& message) {
    return absl::InvalidArgumentError(Cat(file_name, ':', line_no, ": ", message));
  };
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no == 1) {
      const std::vector<std::string_view> f = Fields(line);
      if (f.size() != 2 || f[0] != kHistogramLogMagic) {
        return fail(Cat("not a tailguard histogram log: the first line must be \"",
                        kHistogramLogMagic,
                        " 1\" (write one with tailguard loadgen "
                        "--histogram-log)"));
      }
      if (f[1] != "1") {
        return fail(Cat("format version ", f[1], " is not supported; this reader knows version 1"));
      }
      saw_magic = true;
      continue;
    }
    if (line.starts_with("#start ")) {
      double s = 0;
      const std::vector<std::string_view> f = Fields(line);
      if (f.size() != 2 || !ParseDouble(f[1], s)) return fail("malformed #start line");
      log.start = WallTime(Duration(std::llround(s * 1e9)));
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string_view> f = Fields(line);
    if (f.size() != 7) {
      return fail(
          Cat("expected 7 columns (start_s length_s count p50_s p99_s max_s histogram), "
              "got ",
              f.size()));
    }
    double start = 0, length = 0, count = 0;
    if (!ParseDouble(f[0], start) || !ParseDouble(f[1], length) || !ParseDouble(f[2], count) ||
        start < 0 || length < 0 || count < 0) {
      return fail("start_s, length_s and count must be non-negative numbers");
    }
    std::string bytes;
    if (!absl::Base64Unescape(std::string(f[6]), &bytes)) {
      return fail("the histogram column is not valid base64");
    }
    absl::StatusOr<Histogram> h = Histogram::Deserialize(bytes);
    if (!h.ok()) return fail(Cat("the histogram does not decode: ", h.status().message()));
    if (static_cast<double>(h->count()) != count) {
      return fail(Cat("the count column says ", f[2], " but the histogram holds ", h->count()));
    }
    log.intervals.push_back({FromSeconds(start), FromSeconds(length), *std::move(h)});
  }
  if (!saw_magic) return fail("the file is empty; it is not a tailguard histogram log");
  return log;
}

absl::StatusOr<HistogramLog> ReadHistogramLog(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path, kMaxLogBytes);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        Cat(path, ": cannot read the histogram log: ", text.status().message()));
  }
  return ParseHistogramLog(*text, path);
}

}  // namespace tailguard::loadgen
