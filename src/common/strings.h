// String building for messages. Debian's abseil has its own string_view that does not take a
// std::string_view, so messages are built with this instead of absl::StrCat.
#ifndef TAILGUARD_COMMON_STRINGS_H_
#define TAILGUARD_COMMON_STRINGS_H_

#include <sstream>
#include <string>

namespace tailguard {

// Concatenates the streamable arguments: Cat("bucket ", 7, " of ", name).
template <typename... Args>
std::string Cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

}  // namespace tailguard

#endif  // TAILGUARD_COMMON_STRINGS_H_
