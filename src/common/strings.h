// String building for messages. Debian's abseil has its own string_view that does not take a
// std::string_view, so messages are built with this instead of absl::StrCat.
#ifndef TAILGUARD_COMMON_STRINGS_H_
#define TAILGUARD_COMMON_STRINGS_H_

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <string_view>

namespace tailguard {

// Concatenates the streamable arguments: Cat("bucket ", 7, " of ", name).
template <typename... Args>
std::string Cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// ASCII case-insensitive equality, e.g. of HTTP header names.
inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// `s` without leading and trailing ASCII whitespace.
inline std::string_view TrimAsciiSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace tailguard

#endif  // TAILGUARD_COMMON_STRINGS_H_
