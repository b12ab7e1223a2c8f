// Every bad row of an input file, named: the first kMaxShown in full, then a count. Commands
// that read files (import, replay) check every row, report them all at once and change nothing,
// so one fix-and-retry round fixes the file.
#ifndef TAILGUARD_APPS_BAD_ROWS_H_
#define TAILGUARD_APPS_BAD_ROWS_H_

#include <cstdio>
#include <string>
#include <vector>

namespace tailguard::cli {

class BadRows {
 public:
  // Enough to see a pattern; more only scrolls the first ones away.
  static constexpr size_t kMaxShown = 20;

  // One problem, "file:line: field: what was expected".
  void Add(std::string message) {
    if (shown_.size() < kMaxShown) shown_.push_back(std::move(message));
    ++count_;
  }
  bool empty() const { return count_ == 0; }
  size_t count() const { return count_; }

  // One line per problem, then "... and N more bad rows (M in all); nothing was changed".
  std::string Text() const {
    std::string out;
    for (size_t i = 0; i < shown_.size(); ++i) {
      if (i > 0) out += '\n';
      out += shown_[i];
    }
    if (count_ > shown_.size()) {
      out += "\n... and " + std::to_string(count_ - shown_.size()) + " more bad rows (" +
             std::to_string(count_) + " in all)";
    }
    if (count_ > 1) out += "\n" + std::to_string(count_) + " bad rows; nothing was changed";
    return out;
  }

 private:
  std::vector<std::string> shown_;
  size_t count_ = 0;
};

}  // namespace tailguard::cli

#endif  // TAILGUARD_APPS_BAD_ROWS_H_
