// Human-readable numbers for the CLI and reports.
#ifndef TAILGUARD_COMMON_FORMAT_H_
#define TAILGUARD_COMMON_FORMAT_H_

#include <cstdint>
#include <string>

namespace tailguard {

// A duration in nanoseconds with three significant digits and a unit: "950ns", "12.3us",
// "4.56ms", "1.20s", "2.5min".
std::string FormatDuration(double ns);

// A byte count in the largest binary unit that divides it: 16777216 -> "16MiB", 4096 -> "4KiB";
// sizes that are no whole number of KiB stay in bytes ("1 byte", "1500 bytes").
std::string SizeText(uint64_t bytes);

// A measured size with three significant digits in a binary unit: "512B", "1.50KiB", "12.3MiB".
std::string FormatBytes(double bytes);
// A count with three significant digits: "7", "512", "1.50k", "12.3M". "NaN" when not a number.
std::string FormatCount(double n);

}  // namespace tailguard

#endif  // TAILGUARD_COMMON_FORMAT_H_
