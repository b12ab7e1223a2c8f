// The series id and the dashboard's links, shared by the store, the API, the notifications and
// the CLI so that every link opens what it names.
#ifndef TAILGUARD_COMMON_SERIES_ID_H_
#define TAILGUARD_COMMON_SERIES_ID_H_

#include <string>
#include <string_view>

namespace tailguard {

// 16 lower-case hex digits: FNV-1a 64 of the canonical series key
// (`metric{name="value",...}`, labels sorted by name). The id the API, the store and the
// dashboard's URLs use.
std::string SeriesId(std::string_view key);

// The dashboard's page for one series: {base}/?view=series&id=<SeriesId(key)>. Trailing slashes
// of `base` are dropped; "" when `base` is empty. The dashboard reads only this form (see
// web/src/state.js), so every link to a series goes through here.
std::string SeriesDashboardUrl(std::string_view base, std::string_view key);

// The dashboard's alerts view: {base}/?view=alerts; "" when `base` is empty.
std::string AlertsDashboardUrl(std::string_view base);

}  // namespace tailguard

#endif  // TAILGUARD_COMMON_SERIES_ID_H_
