#include "diagnose/cases_io.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "common/strings.h"
#include "diagnose/csv.h"

namespace tailguard::diagnose {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool ParseSeconds(const std::string& s, double& out) {
  int64_t v = 0;
  if (!ParseIntegerField(s, v)) return false;
  out = static_cast<double>(v);
  return true;
}

}  // namespace

absl::StatusOr<CaseSet> ReadCaseSet(const std::string& dir, double points_after) {
  const std::string cases_path = dir + "/cases.csv";
  std::string series_path = dir + "/series.csv.gz";
  if (!Exists(series_path)) series_path = dir + "/series.csv";
  if (!Exists(cases_path)) {
    return absl::NotFoundError(Cat(cases_path, ": not found; a case directory holds cases.csv ",
                                   "(case_id,alert_time) and series.csv[.gz] ",
                                   "(case_id,timestamp,series,value)"));
  }
  if (!Exists(series_path)) {
    return absl::NotFoundError(Cat(dir, "/series.csv.gz (or series.csv): not found; it holds ",
                                   "case_id,timestamp,series,value, one row per point"));
  }
  absl::StatusOr<std::string> cases_text = ReadMaybeGzip(cases_path, size_t{64} << 20);
  if (!cases_text.ok()) return cases_text.status();
  absl::StatusOr<std::string> series_text = ReadMaybeGzip(series_path);
  if (!series_text.ok()) return series_text.status();
  return ParseCaseSet(*cases_text, cases_path, *series_text, series_path, points_after);
}

absl::StatusOr<CaseSet> ParseCaseSet(std::string_view cases_text, const std::string& cases_path,
                                     std::string_view series_text, const std::string& series_path,
                                     double points_after) {
  CaseSet set;
  Problems problems;
  absl::flat_hash_map<std::string, size_t> index;  // case id -> position in set.cases
  std::vector<std::string> header;
  const bool cases_ok = ForEachCsvRow(
      cases_text, header, [&](size_t line, const std::vector<std::string>& f, bool ok) {
        const std::string where = Cat(cases_path, ":", line, ": ");
        if (!ok || f.size() != 2) {
          problems.Add(Cat(where, "expected 2 fields (case_id,alert_time), got ",
                           ok ? std::to_string(f.size()) : "an unclosed quote"));
          return;
        }
        double alert = 0;
        if (f[0].empty()) {
          problems.Add(Cat(where, "case_id: empty"));
        } else if (!ParseSeconds(f[1], alert)) {
          problems.Add(Cat(where, "alert_time: '", f[1], "' is not integer unix seconds"));
        } else if (!index.emplace(f[0], set.cases.size()).second) {
          problems.Add(Cat(where, "case_id: '", f[0], "' is listed twice"));
        } else {
          set.cases.push_back({f[0], alert, {}});
        }
      });
  if (!cases_ok || header != std::vector<std::string>{"case_id", "alert_time"}) {
    return absl::InvalidArgumentError(
        Cat(cases_path, ":1: the header must be 'case_id,alert_time'"));
  }
  if (!problems.empty()) return problems.ToStatus();

  // Per case, series name -> position in its series vector.
  std::vector<absl::flat_hash_map<std::string, size_t>> by_name(set.cases.size());
  absl::flat_hash_map<std::string, bool> unlisted;
  const bool series_ok = ForEachCsvRow(
      series_text, header, [&](size_t line, const std::vector<std::string>& f, bool ok) {
        if (!ok || f.size() != 4) {
          problems.Add(Cat(series_path, ":", line,
                           ": expected 4 fields (case_id,timestamp,series,value), got ",
                           ok ? std::to_string(f.size()) : "an unclosed quote"));
          return;
        }
        double t = 0, v = 0;
        if (!ParseSeconds(f[1], t)) {
          problems.Add(
              Cat(series_path, ":", line, ": timestamp: '", f[1], "' is not integer unix seconds"));
          return;
        }
        if (f[2].empty()) {
          problems.Add(Cat(series_path, ":", line, ": series: empty"));
          return;
        }
        if (!ParseFiniteField(f[3], v)) {
          problems.Add(Cat(series_path, ":", line, ": value: '", f[3], "' is not a finite number"));
          return;
        }
        ++set.points;
        auto it = index.find(f[0]);
        if (it == index.end()) {
          if (unlisted.emplace(f[0], true).second) set.unlisted_cases.push_back(f[0]);
          ++set.unlisted_points;
          return;
        }
        DiagnosisCase& c = set.cases[it->second];
        if (t > c.alert_time + points_after) return;  // never looked at
        auto [pos, added] = by_name[it->second].emplace(f[2], c.series.size());
        if (added) c.series.push_back({f[2], {}, {}, std::nullopt});
        TimedSeries& s = c.series[pos->second];
        s.times.push_back(t);
        s.values.push_back(v);
      });
  if (!series_ok || header != std::vector<std::string>{"case_id", "timestamp", "series", "value"}) {
    return absl::InvalidArgumentError(
        Cat(series_path, ":1: the header must be 'case_id,timestamp,series,value'"));
  }
  if (!problems.empty()) return problems.ToStatus();
  return set;
}

std::string RankingHeader() {
  return "case_id,rank,series,score,quadrant,kind,onset_s,rationale\n";
}

std::string RankingRows(const std::string& case_id, const Ranking& ranking, double alert_time) {
  std::string out;
  char num[64];
  for (size_t i = 0; i < ranking.ranked.size(); ++i) {
    const Candidate& c = ranking.ranked[i];
    std::snprintf(num, sizeof num, "%.6g", c.evidence.score);
    out += Cat(CsvField(case_id), ",", i + 1, ",", CsvField(c.series), ",", num, ",",
               QuadrantName(c.signal.quadrant), ",",
               c.signal.kind == SignalKind::kCause ? "cause" : "symptom", ",",
               static_cast<long long>(std::llround(c.evidence.onset_time - alert_time)), ",",
               CsvField(c.rationale), "\n");
  }
  return out;
}

}  // namespace tailguard::diagnose
