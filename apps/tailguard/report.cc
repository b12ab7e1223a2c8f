// `tailguard report ALERT_ID`: the incident report of one alert episode from the event store, as
// a self-contained HTML page (charts included) and as Markdown (src/analyze/report.h). Works on
// the store file directly, next to a running `tailguard serve`, so it needs no server.
#include "analyze/report.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

#include "commands.h"
#include "common/duration.h"
#include "common/format.h"
#include "common/strings.h"
#include "store/history_store.h"
#include "store_file.h"
#include "tailguard/clock.h"

namespace tailguard::cli {
namespace {

struct ReportFlags {
  std::string id;  // a number, or "latest"
  std::string db;
  std::string config;
  std::string out = ".";
  std::string format = "html,md";
  std::string before = "30m";
  std::string after = "10m";
};

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "tailguard report: %s\n", std::string(s.message()).c_str());
  return absl::IsInvalidArgument(s) || absl::IsNotFound(s) ? 2 : 1;
}

absl::StatusOr<std::chrono::minutes> Minutes(std::string_view flag, const std::string& text) {
  const std::optional<Duration> d = ParseDurationText(text);
  if (!d) {
    return absl::InvalidArgumentError(
        Cat(flag, " \"", text, "\": expected a duration like 30m, 2h or 90s"));
  }
  return std::chrono::ceil<std::chrono::minutes>(*d);
}

// Writes `text` to `path` through a temporary file renamed into place, so that a reader (a
// browser refreshing the page) never sees half a report.
absl::Status WriteFile(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = path.string() + Cat(".tmp.", getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return absl::UnavailableError(Cat("cannot write ", tmp.string()));
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    f.close();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return absl::UnavailableError(Cat("cannot write ", tmp.string(), " (disk full?)"));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return absl::UnavailableError(Cat("cannot write ", path.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

// The id on the command line, or for "latest" the newest episode that fired (else the newest of
// all, when none fired): what the engineer wants written up after the incident.
absl::StatusOr<int64_t> ResolveId(store::EventStore& events, const std::string& text,
                                  const std::string& path) {
  if (text != "latest") {
    int64_t v = 0;
    std::from_chars(text.data(), text.data() + text.size(), v);  // checked by the validator
    return v;
  }
  store::AlertQuery q;
  q.include_archived = true;
  q.limit = 0;
  absl::StatusOr<std::vector<store::AlertRow>> all = events.ListAlerts(q);
  if (!all.ok()) return all.status();
  if (all->empty()) return absl::NotFoundError(Cat("no alert in ", path, " yet"));
  // ListAlerts() is newest first.
  const auto fired = std::find_if(all->begin(), all->end(),
                                  [](const store::AlertRow& a) { return a.fired_at.has_value(); });
  return fired != all->end() ? fired->id : all->front().id;
}

int Run(const ReportFlags& f) {
  bool html = false, md = false;
  for (size_t start = 0; start <= f.format.size();) {
    const size_t comma = std::min(f.format.find(',', start), f.format.size());
    const std::string_view word = std::string_view(f.format).substr(start, comma - start);
    if (word == "html") {
      html = true;
    } else if (word == "md") {
      md = true;
    } else {
      return Fail(absl::InvalidArgumentError(
          Cat("--format \"", f.format, "\": expected html, md or html,md")));
    }
    start = comma + 1;
  }
  analyze::ReportOptions options;
  absl::StatusOr<std::chrono::minutes> before = Minutes("--before", f.before);
  if (!before.ok()) return Fail(before.status());
  absl::StatusOr<std::chrono::minutes> after = Minutes("--after", f.after);
  if (!after.ok()) return Fail(after.status());
  options.before = *before;
  options.after = *after;

  absl::StatusOr<std::string> path = StoreFilePath(f.db, f.config);
  if (!path.ok()) return Fail(path.status());
  absl::StatusOr<std::unique_ptr<store::EventStore>> events = OpenExistingEventStore(*path);
  if (!events.ok()) return Fail(events.status());
  absl::StatusOr<std::unique_ptr<store::HistoryStore>> history = store::HistoryStore::Open(*path);
  if (!history.ok()) return Fail(absl::UnavailableError(history.status().message()));

  absl::StatusOr<int64_t> id = ResolveId(**events, f.id, *path);
  if (!id.ok()) return Fail(id.status());
  absl::StatusOr<analyze::IncidentReport> report =
      analyze::LoadIncidentReport(**events, history->get(), *id, Clock::Real().WallNow(), options);
  if (absl::IsNotFound(report.status())) {
    return Fail(
        absl::NotFoundError(Cat("no alert #", *id, " in ", *path,
                                ": `tailguard alerts list --all --db ", *path, "` lists the ids")));
  }
  if (!report.ok()) return Fail(report.status());

  std::error_code ec;
  std::filesystem::create_directories(f.out, ec);
  if (ec) {
    return Fail(absl::UnavailableError(Cat("--out ", f.out, ": cannot create: ", ec.message())));
  }
  const std::filesystem::path base = std::filesystem::path(f.out) / Cat("alert-", *id);
  for (auto [on, ext, render] : {std::tuple{html, ".html", &analyze::RenderReportHtml},
                                 std::tuple{md, ".md", &analyze::RenderReportMarkdown}}) {
    if (!on) continue;
    const std::string text = render(*report);
    const std::filesystem::path file = base.string() + ext;
    if (absl::Status s = WriteFile(file, text); !s.ok()) return Fail(s);
    std::printf("wrote %s (%s)\n", file.string().c_str(), SizeText(text.size()).c_str());
  }
  return 0;
}

}  // namespace

void AddReport(CLI::App& app, Action& action) {
  auto f = std::make_shared<ReportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "The incident report of one alert: a self-contained HTML page (charts included, nothing\n"
      "fetched) and Markdown, with the timeline, the alerted series, the diagnosis' ranked causes\n"
      "against their baselines, what changed and the actions taken. Reads the event store\n"
      "directly, next to a running `tailguard serve`.");
  cmd->add_option("id", f->id,
                  "Alert id (tailguard alerts list, or the dashboard's Alerts view), or latest: "
                  "the newest alert that fired")
      ->required()
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            std::string copy = text;
            if (text == "latest" || IdValidator()(copy).empty()) return "";
            return Cat(
                "expected an alert id, a whole number above 0 like 12 (the ID column of "
                "tailguard alerts list), or latest; got \"",
                text, "\"");
          },
          "ID|latest"));
  cmd->add_option("--db,--store", f->db, "Event store file (default: ./tailguard.db)");
  cmd->add_option("-c,--config", f->config,
                  "Gateway configuration whose store.path to use (instead of --db)")
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--out", f->out, "Directory for alert-ID.html and alert-ID.md")
      ->capture_default_str();
  cmd->add_option("--format", f->format, "What to write: html, md or html,md")
      ->capture_default_str();
  cmd->add_option("--before", f->before, "History charted before the alert started")
      ->capture_default_str();
  cmd->add_option("--after", f->after, "History charted after it ended")->capture_default_str();
  cmd->footer(
      "Examples:\n"
      "  tailguard report 12                       ./alert-12.html and ./alert-12.md\n"
      "  tailguard report latest                   the newest alert that fired\n"
      "  tailguard report 12 --db /var/lib/tailguard/tailguard.db --out reports/\n"
      "  tailguard report 12 --format md --before 2h\n"
      "Exit codes: 0 written, 1 the store or the output cannot be used, 2 a bad flag or an\n"
      "unknown id.");
  cmd->callback([f, &action] { action = [f] { return Run(*f); }; });
}

}  // namespace tailguard::cli
