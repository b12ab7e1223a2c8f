// `tailguard diagnose`: offline root-cause ranking of recorded incidents (--cases DIR) and slice
// attribution of a rise in a per-label sum/count file (--slices FILE --at T). docs/diagnose.md.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common/duration.h"
#include "common/progress.h"
#include "common/strings.h"
#include "diagnose/cases_io.h"
#include "diagnose/ranker.h"
#include "diagnose/slices.h"

namespace tailguard::cli {
namespace {

struct DiagnoseFlags {
  std::string cases;
  std::string slices;
  std::string out;
  int64_t at = 0;
  bool at_set = false;
  std::string baseline = "1h";
  std::string guard = "60s";
  std::string after = "5m";
  bool quiet = false;
};

bool ParseSecondsFlag(const std::string& name, const std::string& text, double& out) {
  std::optional<Duration> d = ParseDurationText(text);
  if (!d || d->count() < 0) {
    std::fprintf(stderr, "tailguard diagnose: %s: '%s' is not a duration (e.g. 90s, 5m, 1h)\n",
                 name.c_str(), text.c_str());
    return false;
  }
  out = std::chrono::duration<double>(*d).count();
  return true;
}

bool WriteOut(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return true;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "tailguard diagnose: %s: cannot write: %s\n", path.c_str(),
                 std::strerror(errno));
    return false;
  }
  return true;
}

int RunCases(const DiagnoseFlags& f) {
  diagnose::RankOptions options;
  if (!ParseSecondsFlag("--baseline", f.baseline, options.baseline_s) ||
      !ParseSecondsFlag("--guard", f.guard, options.guard_s) ||
      !ParseSecondsFlag("--after", f.after, options.after_s)) {
    return 2;
  }
  if (options.after_s > 300) {
    std::fprintf(stderr,
                 "tailguard diagnose: --after %s: at most 5m; the offline format allows points up "
                 "to alert_time + 300 s\n",
                 f.after.c_str());
    return 2;
  }
  absl::StatusOr<diagnose::CaseSet> set = diagnose::ReadCaseSet(f.cases, options.after_s);
  if (!set.ok()) {
    std::fprintf(stderr, "tailguard diagnose: %s\n", std::string(set.status().message()).c_str());
    return absl::IsNotFound(set.status()) || absl::IsInvalidArgument(set.status()) ? 2 : 1;
  }
  std::string text = diagnose::RankingHeader();
  size_t empty = 0;
  {
    std::unique_ptr<Progress> progress;
    if (!f.quiet) {
      progress =
          std::make_unique<Progress>("cases ranked", static_cast<int64_t>(set->cases.size()));
    }
    for (const diagnose::DiagnosisCase& c : set->cases) {
      diagnose::Ranking r = diagnose::RankCauses(c.series, c.alert_time, options);
      if (r.ranked.empty()) {
        ++empty;
        std::fprintf(stderr,
                     "tailguard diagnose: case %s: no series has points both before alert_time - "
                     "%s and in the window after it; nothing ranked\n",
                     c.id.c_str(), f.guard.c_str());
      }
      text += diagnose::RankingRows(c.id, r, c.alert_time);
      if (progress) progress->Advance(1, c.id);
    }
  }
  if (!set->unlisted_cases.empty()) {
    std::fprintf(
        stderr,
        "tailguard diagnose: %zu case id(s) in series.csv are not in cases.csv (first: %s); "
        "their %zu points were not ranked\n",
        set->unlisted_cases.size(), set->unlisted_cases.front().c_str(), set->unlisted_points);
  }
  if (!WriteOut(f.out, text)) return 1;
  if (!f.quiet) {
    std::fprintf(stderr, "tailguard diagnose: %zu cases, %zu points read, %zu cases ranked -> %s\n",
                 set->cases.size(), set->points, set->cases.size() - empty, f.out.c_str());
  }
  return 0;
}

int RunSlices(const DiagnoseFlags& f) {
  if (!f.at_set) {
    std::fprintf(stderr,
                 "tailguard diagnose: --slices needs --at T, the interval (unix seconds) at which "
                 "sum/count rose\n");
    return 2;
  }
  absl::StatusOr<diagnose::SliceTable> table = diagnose::ReadSliceTable(f.slices);
  if (!table.ok()) {
    std::fprintf(stderr, "tailguard diagnose: %s\n", std::string(table.status().message()).c_str());
    return absl::IsNotFound(table.status()) || absl::IsInvalidArgument(table.status()) ? 2 : 1;
  }
  absl::StatusOr<diagnose::SliceAttribution> a = diagnose::AttributeSlices(*table, f.at);
  if (!a.ok()) {
    std::fprintf(stderr, "tailguard diagnose: %s: %s\n", f.slices.c_str(),
                 std::string(a.status().message()).c_str());
    return 2;
  }
  if (!WriteOut(f.out, diagnose::SliceRows(*table, *a))) return 1;
  if (!f.quiet) {
    std::fprintf(
        stderr,
        "tailguard diagnose: %zu rows, %zu leaves at %lld; mean %.6g -> %.6g; %zu slice(s) "
        "named -> %s\n",
        table->rows, a->leaves, static_cast<long long>(f.at), a->baseline_mean, a->at_mean,
        a->named, f.out.c_str());
  }
  return 0;
}

}  // namespace

void AddDiagnose(CLI::App& app, Action& action) {
  auto f = std::make_shared<DiagnoseFlags>();
  CLI::App* cmd = app.add_subcommand(
      "diagnose",
      "Rank the likely causes of recorded incidents (--cases DIR) or the label slices behind a "
      "rise (--slices FILE --at T). docs/diagnose.md");
  CLI::Option* cases =
      cmd->add_option("--cases", f->cases,
                      "Directory with cases.csv (case_id,alert_time) and series.csv[.gz] "
                      "(case_id,timestamp,series,value)");
  CLI::Option* slices = cmd->add_option(
      "--slices", f->slices, "CSV (or .csv.gz) with timestamp,<dimension columns...>,sum,count");
  cases->excludes(slices);
  slices->excludes(cases);
  cmd->add_option_function<int64_t>(
         "--at",
         [f](int64_t t) {
           f->at = t;
           f->at_set = true;
         },
         "With --slices: the interval (unix seconds) at which sum/count rose")
      ->needs(slices);
  cmd->add_option("--out", f->out, "Where to write the CSV ('-' for stdout)")->required();
  cmd->add_option("--baseline", f->baseline,
                  "With --cases: history before the guard band used as the baseline")
      ->capture_default_str();
  cmd->add_option("--guard", f->guard,
                  "With --cases: the guard band before alert_time kept out of the baseline (an "
                  "alert fires after the onset)")
      ->capture_default_str();
  cmd->add_option("--after", f->after, "With --cases: the window after alert_time (at most 5m)")
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", f->quiet, "No progress bar or summary on stderr");
  cmd->callback([f, &action] {
    action = [f] {
      if (f->cases.empty() && f->slices.empty()) {
        std::fprintf(stderr, "tailguard diagnose: give --cases DIR or --slices FILE --at T\n");
        return 2;
      }
      return f->cases.empty() ? RunSlices(*f) : RunCases(*f);
    };
  });
}

}  // namespace tailguard::cli
