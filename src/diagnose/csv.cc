#include "diagnose/csv.h"

#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/numbers.h"
#include "common/strings.h"

namespace tailguard::diagnose {

absl::StatusOr<std::string> ReadMaybeGzip(const std::string& path, size_t max_bytes) {
  // gzread reads plain files through unchanged, so one path serves both.
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::NotFoundError(Cat(path, ": cannot open: ", std::strerror(errno)));
  }
  std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(f, gzclose);
  gzbuffer(f, 1 << 17);
  std::string out;
  char buf[1 << 16];
  while (true) {
    const int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int code = 0;
      const char* why = gzerror(f, &code);
      return absl::DataLossError(Cat(path, ": cannot read: ", why));
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      return absl::OutOfRangeError(
          Cat(path, ": is larger than ", max_bytes >> 20, " MiB uncompressed"));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  int code = 0;
  gzerror(f, &code);
  if (code != Z_OK && code != Z_BUF_ERROR) {
    return absl::DataLossError(Cat(path, ": the gzip stream is corrupt"));
  }
  if (!gzdirect(f) && code == Z_BUF_ERROR) {
    return absl::DataLossError(Cat(path, ": the gzip stream is cut short"));
  }
  return out;
}

bool SplitCsvLine(std::string_view line, std::vector<std::string>& fields) {
  fields.clear();
  std::string field;
  size_t i = 0;
  while (true) {
    field.clear();
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (true) {
        if (i >= line.size()) return false;  // no closing quote
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += line[i++];
      }
      if (i < line.size() && line[i] != ',') return false;
    } else {
      const size_t comma = line.find(',', i);
      const size_t end = comma == std::string_view::npos ? line.size() : comma;
      field.assign(line.data() + i, end - i);
      i = end;
    }
    fields.push_back(field);
    if (i >= line.size()) return true;
    ++i;  // the comma
  }
}

bool ParseIntegerField(const std::string& s, int64_t& out) {
  return absl::SimpleAtoi(absl::string_view(s.data(), s.size()), &out);
}

bool ParseFiniteField(const std::string& s, double& out) {
  return absl::SimpleAtod(absl::string_view(s.data(), s.size()), &out) && std::isfinite(out);
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

void Problems::Add(std::string message) {
  if (shown_.size() < kMaxShown) shown_.push_back(std::move(message));
  ++count_;
}

absl::Status Problems::ToStatus() const {
  if (count_ == 0) return absl::OkStatus();
  std::string text;
  for (const std::string& s : shown_) {
    if (!text.empty()) text += '\n';
    text += s;
  }
  if (count_ > shown_.size()) {
    text += Cat("\n... and ", count_ - shown_.size(), " more (", count_, " bad rows in all)");
  }
  return absl::InvalidArgumentError(text);
}

}  // namespace tailguard::diagnose
