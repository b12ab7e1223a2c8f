// The incident report of one alert episode, for `tailguard report ALERT_ID`: what the event store
// and the per-minute history hold about it (the episode, its timeline, the diagnoses with their
// ranked causes, what changed, the notifications sent and the actions taken, the alerted series
// around the episode), as one self-contained HTML page (inline CSS and SVG charts: no script, no
// font, nothing fetched, so it opens from a ticket attachment or an air-gapped laptop and prints)
// and as Markdown for the incident ticket or the chat (text sparklines in place of charts).
//
// Loading reads the store; rendering is pure and depends on nothing but the loaded report, so
// the same report renders the same bytes. Every text from the store (series keys, label values,
// rationales, comments) is escaped: label values come from requests and may hold anything.
#ifndef TAILGUARD_ANALYZE_REPORT_H_
#define TAILGUARD_ANALYZE_REPORT_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "store/event_store.h"
#include "store/history_store.h"
#include "tailguard/clock.h"

namespace tailguard::analyze {

struct IncidentReport {
  store::AlertDetail detail;                   // the episode, timeline, notifications, notes
  std::vector<store::DiagnosisRow> diagnoses;  // oldest first; the last is the current one
  std::vector<store::MinuteRow> minutes;       // the alerted series per minute in (from, to]
  WallTime from{};                             // the charted window
  WallTime to{};
  WallTime generated_at{};
  std::string source;  // where it came from, for the footer (the store file)
};

struct ReportOptions {
  // History charted before the episode's start: the baseline the eye compares with. Default 30
  // minutes, the span the live diagnosis' baseline is drawn from.
  std::chrono::minutes before{30};
  // After its end (capped at `now`, and up to `now` while it is active). Default 10 minutes, to
  // show the recovery.
  std::chrono::minutes after{10};
};

// Reads episode `id` and everything about it. `history` may be null (a store without history
// tables: the report says the series has no chart). NotFound for an unknown id; the store's own
// errors otherwise.
absl::StatusOr<IncidentReport> LoadIncidentReport(store::EventStore& events,
                                                  const store::HistoryStore* history, int64_t id,
                                                  WallTime now, const ReportOptions& options = {});

// The self-contained HTML page.
std::string RenderReportHtml(const IncidentReport& report);
// The same content in GitHub-flavoured Markdown.
std::string RenderReportMarkdown(const IncidentReport& report);

}  // namespace tailguard::analyze

#endif  // TAILGUARD_ANALYZE_REPORT_H_
