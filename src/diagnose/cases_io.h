// The offline diagnosis format of `tailguard diagnose --cases DIR` (documented in
// docs/diagnose.md and ../shared/datasets/rca-sockshop1/README.md):
//   DIR/series.csv[.gz]  case_id,timestamp,series,value   (unix seconds; one row per point)
//   DIR/cases.csv        case_id,alert_time
// and the ranking it writes, case_id,rank,series,score[,quadrant,kind,onset_s,rationale].
#ifndef TAILGUARD_DIAGNOSE_CASES_IO_H_
#define TAILGUARD_DIAGNOSE_CASES_IO_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "diagnose/ranker.h"

namespace tailguard::diagnose {

struct DiagnosisCase {
  std::string id;
  double alert_time = 0;
  std::vector<TimedSeries> series;  // by name
};

struct CaseSet {
  std::vector<DiagnosisCase> cases;  // in the order of cases.csv
  size_t points = 0;                 // rows of series.csv read
  // Case ids of series.csv that cases.csv does not list: their rows are counted here, not
  // ranked.
  std::vector<std::string> unlisted_cases;
  size_t unlisted_points = 0;
};

// Reads DIR/cases.csv and DIR/series.csv.gz (or DIR/series.csv). Every bad row is reported at
// once (InvalidArgument, "FILE:LINE: field: what is wrong", the first 20 and a count), as are a
// wrong header, a duplicate case id and a missing file (NotFound, naming what to create).
// `points_after` limits what is kept: points later than alert_time + points_after are dropped
// as they are read (the offline rules allow alert + 300 s at most).
absl::StatusOr<CaseSet> ReadCaseSet(const std::string& dir, double points_after);
// The same for the two files' text already read; the paths name them in messages.
absl::StatusOr<CaseSet> ParseCaseSet(std::string_view cases_text, const std::string& cases_path,
                                     std::string_view series_text, const std::string& series_path,
                                     double points_after);

// The ranking of one case as CSV rows (no header).
std::string RankingRows(const std::string& case_id, const Ranking& ranking, double alert_time);
// The header line of the ranking, with its newline.
std::string RankingHeader();

}  // namespace tailguard::diagnose

#endif  // TAILGUARD_DIAGNOSE_CASES_IO_H_
