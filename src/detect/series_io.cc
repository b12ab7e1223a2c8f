// Time series files: timestamp parsing and formatting, an RFC 4180 CSV reader, NAB-layout series
// and score files. Parsing is by hand (no locale, no allocation per field beyond the strings).
#include "tailguard/series_io.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <system_error>

#include "absl/status/status.h"
#include "common/strings.h"

namespace tailguard {
namespace {

namespace fs = std::filesystem;
using std::chrono::duration_cast;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr const char* kTimestampForms =
    "expected \"YYYY-MM-DD HH:MM:SS[.ffffff]\", RFC 3339 \"YYYY-MM-DDTHH:MM:SS[.f][Z|+HH:MM]\" "
    "or Unix seconds";

// WallTime counts int64 nanoseconds: about 292 years either side of 1970.
constexpr int64_t kMaxSeconds = 9'000'000'000;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Reads exactly `n` digits at `pos` into `out`; false if they are not all digits.
bool Digits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (!IsDigit(s[i])) return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

absl::Status BadTimestamp(std::string_view text, std::string_view why = {}) {
  if (why.empty()) {
    return absl::InvalidArgumentError(Cat("bad timestamp \"", text, "\": ", kTimestampForms));
  }
  return absl::InvalidArgumentError(
      Cat("bad timestamp \"", text, "\": ", why, "; ", kTimestampForms));
}

// [+-]digits[.digits] as Unix seconds, exact to the nanosecond; exponent forms go through double.
absl::StatusOr<WallTime> ParseUnixSeconds(std::string_view text) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.find_first_of("eE") != std::string_view::npos) {
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) ||
        std::fabs(v) > static_cast<double>(kMaxSeconds)) {
      return BadTimestamp(text);
    }
    return WallTime(nanoseconds(std::llround((negative ? -v : v) * 1e9)));
  }
  int64_t whole = 0;
  int64_t frac_ns = 0;
  size_t i = 0;
  size_t int_digits = 0;
  for (; i < s.size() && IsDigit(s[i]); ++i, ++int_digits) {
    whole = whole * 10 + (s[i] - '0');
    if (whole > kMaxSeconds) return BadTimestamp(text, "out of range");
  }
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    int64_t scale = 100'000'000;
    for (; i < s.size() && IsDigit(s[i]); ++i, ++frac_digits) {
      frac_ns += (s[i] - '0') * scale;  // digits past nanoseconds add 0
      scale /= 10;
    }
  }
  if (i != s.size() || int_digits + frac_digits == 0) return BadTimestamp(text);
  int64_t ns = whole * 1'000'000'000 + frac_ns;
  return WallTime(nanoseconds(negative ? -ns : ns));
}

}  // namespace

absl::StatusOr<WallTime> ParseTimestamp(std::string_view text) {
  const std::string_view s = Trim(text);
  if (s.empty()) return BadTimestamp(text, "empty");
  // A calendar date starts with four digits and a dash; anything else must be a number.
  if (!(s.size() >= 5 && IsDigit(s[0]) && IsDigit(s[1]) && IsDigit(s[2]) && IsDigit(s[3]) &&
        s[4] == '-')) {
    return ParseUnixSeconds(s);
  }
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (s.size() < 19 || !Digits(s, 0, 4, year) || s[4] != '-' || !Digits(s, 5, 2, month) ||
      s[7] != '-' || !Digits(s, 8, 2, day) || (s[10] != ' ' && s[10] != 'T' && s[10] != 't') ||
      !Digits(s, 11, 2, hour) || s[13] != ':' || !Digits(s, 14, 2, minute) || s[16] != ':' ||
      !Digits(s, 17, 2, second)) {
    return BadTimestamp(text);
  }
  size_t pos = 19;
  int64_t frac_ns = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    const size_t first = pos;
    int64_t scale = 100'000'000;
    for (; pos < s.size() && IsDigit(s[pos]); ++pos) {
      frac_ns += (s[pos] - '0') * scale;
      scale /= 10;
    }
    if (pos == first) return BadTimestamp(text, "no digits after '.'");
  }
  int offset_s = 0;
  if (pos < s.size()) {
    if ((s[pos] == 'Z' || s[pos] == 'z') && pos + 1 == s.size()) {
      pos = s.size();
    } else if (s[pos] == '+' || s[pos] == '-') {
      int oh = 0, om = 0;
      const bool colon = pos + 6 == s.size() && s[pos + 3] == ':';
      const bool bare = pos + 5 == s.size();
      if (!(colon || bare) || !Digits(s, pos + 1, 2, oh) ||
          !Digits(s, pos + (colon ? 4 : 3), 2, om) || oh > 23 || om > 59) {
        return BadTimestamp(text, "bad UTC offset");
      }
      offset_s = (oh * 3600 + om * 60) * (s[pos] == '-' ? -1 : 1);
      pos = s.size();
    } else {
      return BadTimestamp(text);
    }
  }
  const std::chrono::year_month_day ymd{std::chrono::year(year),
                                        std::chrono::month(static_cast<unsigned>(month)),
                                        std::chrono::day(static_cast<unsigned>(day))};
  if (!ymd.ok()) return BadTimestamp(text, "no such date");
  // Second 60 is a leap second in RFC 3339; it lands on the next minute.
  if (hour > 23 || minute > 59 || second > 60) return BadTimestamp(text, "no such time");
  const std::chrono::sys_days days(ymd);
  const int64_t secs = int64_t{days.time_since_epoch().count()} * 86400 + hour * 3600 +
                       minute * 60 + second - offset_s;
  if (secs > kMaxSeconds || secs < -kMaxSeconds) return BadTimestamp(text, "out of range");
  return WallTime(nanoseconds(secs * 1'000'000'000 + frac_ns));
}

std::string FormatTimestamp(WallTime t) {
  const auto secs = std::chrono::floor<seconds>(t);
  const auto days = std::chrono::floor<std::chrono::days>(secs);
  const std::chrono::year_month_day ymd(days);
  const std::chrono::hh_mm_ss<seconds> hms(secs - days);
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%04d-%02u-%02u %02d:%02d:%02d", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()));
  return buf;
}

std::string FormatTimestampUtc(WallTime t) { return FormatTimestamp(t) + " UTC"; }

std::string FormatRfc3339(WallTime t) {
  const auto ms = std::chrono::floor<std::chrono::milliseconds>(t.time_since_epoch());
  std::string s = FormatTimestamp(t);
  s[10] = 'T';
  char frac[8];
  std::snprintf(frac, sizeof(frac), ".%03dZ",
                static_cast<int>(((ms.count() % 1000) + 1000) % 1000));
  return s + frac;
}

namespace {

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return absl::NotFoundError(Cat(path, ": no such file"));
  if (fs::is_directory(path, ec)) {
    return absl::InvalidArgumentError(Cat(path, ": is a directory, not a CSV file"));
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::InvalidArgumentError(Cat(path, ": cannot open: ", std::strerror(errno)));
  }
  std::string data;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) data.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return absl::InvalidArgumentError(Cat(path, ": read error"));
  return data;
}

}  // namespace

absl::StatusOr<CsvTable> ReadCsv(const std::string& path) {
  absl::StatusOr<std::string> data = ReadWholeFile(path);
  if (!data.ok()) return data.status();
  return ParseCsv(*data, path);
}

absl::StatusOr<CsvTable> ParseCsv(std::string_view s, std::string_view path) {
  if (s.starts_with("\xEF\xBB\xBF")) s.remove_prefix(3);  // a UTF-8 byte order mark

  CsvTable table;
  std::vector<std::string> record;
  std::string field;
  int line = 1;
  size_t i = 0;
  bool have_header = false;
  while (i < s.size()) {
    // One record, starting at `line`.
    const int record_line = line;
    record.clear();
    bool end_of_record = false;
    while (!end_of_record) {
      field.clear();
      if (i < s.size() && s[i] == '"') {
        const int quote_line = line;
        ++i;
        bool closed = false;
        while (i < s.size()) {
          const char c = s[i++];
          if (c == '"') {
            if (i < s.size() && s[i] == '"') {
              field.push_back('"');
              ++i;
            } else {
              closed = true;
              break;
            }
          } else {
            if (c == '\n') ++line;
            field.push_back(c);
          }
        }
        if (!closed) {
          return absl::InvalidArgumentError(
              Cat(path, ":", quote_line, ": unterminated quoted field"));
        }
        if (i < s.size() && s[i] != ',' && s[i] != '\n' && s[i] != '\r') {
          return absl::InvalidArgumentError(
              Cat(path, ":", line, ": unexpected '", s[i], "' after a closing quote"));
        }
      } else {
        const size_t end = s.find_first_of(",\r\n", i);
        const size_t stop = end == std::string_view::npos ? s.size() : end;
        field.assign(s.substr(i, stop - i));
        i = stop;
      }
      record.push_back(std::move(field));
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      // End of line (LF or CRLF; a lone CR also ends it) or of the file.
      if (i < s.size() && s[i] == '\r') ++i;
      if (i < s.size() && s[i] == '\n') ++i;
      ++line;
      end_of_record = true;
    }
    // Blank lines are skipped.
    if (record.size() == 1 && record[0].empty()) continue;
    if (!have_header) {
      table.header = std::move(record);
      record = {};
      have_header = true;
      continue;
    }
    if (record.size() != table.header.size()) {
      return absl::InvalidArgumentError(Cat(path, ":", record_line, ": ", record.size(),
                                            " fields, but the header has ", table.header.size()));
    }
    table.rows.push_back(std::move(record));
    record = {};
    table.line.push_back(record_line);
  }
  if (!have_header) return absl::InvalidArgumentError(Cat(path, ": empty file, no header row"));
  return table;
}

absl::StatusOr<TimeSeries> ReadTimeSeriesCsv(const std::string& path) {
  absl::StatusOr<CsvTable> table = ReadCsv(path);
  if (!table.ok()) return table.status();
  int ts_col = -1;
  int value_col = -1;
  std::string names;
  for (size_t c = 0; c < table->header.size(); ++c) {
    const std::string name = Lower(Trim(table->header[c]));
    if (name == "timestamp" && ts_col < 0) ts_col = static_cast<int>(c);
    if (name == "value" && value_col < 0) value_col = static_cast<int>(c);
    names += Cat(c == 0 ? "" : ", ", "\"", table->header[c], "\"");
  }
  if (ts_col < 0 || value_col < 0) {
    return absl::InvalidArgumentError(Cat(path,
                                          ":1: the header must name the columns "
                                          "\"timestamp\" and \"value\" (it has ",
                                          names, ")"));
  }
  TimeSeries series;
  series.path = path;
  series.times.reserve(table->rows.size());
  series.values.reserve(table->rows.size());
  for (size_t r = 0; r < table->rows.size(); ++r) {
    const std::vector<std::string>& row = table->rows[r];
    absl::StatusOr<WallTime> t = ParseTimestamp(row[static_cast<size_t>(ts_col)]);
    if (!t.ok()) {
      return absl::InvalidArgumentError(
          Cat(path, ":", table->line[r], ": timestamp: ", t.status().message()));
    }
    std::string_view v = Trim(row[static_cast<size_t>(value_col)]);
    double value = std::numeric_limits<double>::quiet_NaN();
    if (!v.empty()) {
      std::string_view digits = v;
      if (digits.front() == '+') digits.remove_prefix(1);
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (ec != std::errc() || end != digits.data() + digits.size()) {
        return absl::InvalidArgumentError(
            Cat(path, ":", table->line[r], ": value: \"", v, "\" is not a number"));
      }
      // from_chars reads "inf" and "nan": neither is a measurement (an empty field is the
      // way to say "missing").
      if (!std::isfinite(value)) {
        return absl::InvalidArgumentError(Cat(path, ":", table->line[r], ": value: \"", v,
                                              "\" is not a finite number; leave the field empty "
                                              "for a missing point"));
      }
    }
    if (!series.times.empty() && *t < series.times.back()) {
      return absl::InvalidArgumentError(
          Cat(path, ":", table->line[r], ": timestamp: ", row[static_cast<size_t>(ts_col)],
              " is earlier than the row before it; sort the file by time"));
    }
    series.times.push_back(*t);
    series.values.push_back(value);
  }
  if (series.times.empty()) {
    return absl::InvalidArgumentError(Cat(path, ": no data rows after the header"));
  }
  return series;
}

namespace {

// Shortest text that reads back as the same double; empty for NaN (a missing point).
void AppendNumber(std::string& out, double v) {
  if (std::isnan(v)) return;
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, ec == std::errc() ? end : buf);
}

}  // namespace

absl::Status WriteScoresCsv(const std::string& path, const TimeSeries& series,
                            const std::vector<double>& scores) {
  if (scores.size() != series.times.size() || series.values.size() != series.times.size()) {
    return absl::InvalidArgumentError(
        Cat(path, ": ", scores.size(), " scores for ", series.times.size(), " points"));
  }
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  std::string out = "timestamp,value,anomaly_score\n";
  out.reserve(out.size() + series.times.size() * 48);
  for (size_t i = 0; i < series.times.size(); ++i) {
    out += FormatTimestamp(series.times[i]);
    out += ',';
    AppendNumber(out, series.values[i]);
    out += ',';
    // A score is always written; a NaN score (never expected) reads back as NaN in pandas.
    if (std::isnan(scores[i])) {
      out += "nan";
    } else {
      AppendNumber(out, scores[i]);
    }
    out += '\n';
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::InvalidArgumentError(Cat(path, ": cannot create: ", std::strerror(errno)));
  }
  const bool wrote = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) return absl::InternalError(Cat(path, ": write failed"));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ListNabCorpus(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return absl::NotFoundError(Cat(dir, ": no such directory"));
  std::vector<std::string> files;
  for (const fs::directory_entry& category : fs::directory_iterator(dir, ec)) {
    if (!category.is_directory(ec)) continue;
    std::error_code ec2;
    for (const fs::directory_entry& file : fs::directory_iterator(category.path(), ec2)) {
      if (file.path().extension() != ".csv" || file.is_directory(ec2)) continue;
      files.push_back(
          Cat(category.path().filename().string(), "/", file.path().filename().string()));
    }
  }
  if (ec) return absl::InvalidArgumentError(Cat(dir, ": cannot list: ", ec.message()));
  if (files.empty()) {
    return absl::NotFoundError(Cat(dir, ": no <category>/<file>.csv series (NAB layout)"));
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace tailguard
