// A value in its unit, for a person.
#include "metrics/unit_format.h"

#include "common/format.h"

namespace tailguard::metrics {

std::string FormatInUnit(double value, Unit unit) {
  switch (unit) {
    case Unit::kNanoseconds:
      return FormatDuration(value * 1e9);
    case Unit::kBytes:
      return FormatBytes(value);
    case Unit::kCount:
      return FormatCount(value);
  }
  return FormatCount(value);
}

}  // namespace tailguard::metrics
