// The dashboard's files (web/, bundled by esbuild), embedded in the binary at build time so the
// gateway serves them with no CDN and no files on disk.
#ifndef TAILGUARD_SERVER_DASHBOARD_H_
#define TAILGUARD_SERVER_DASHBOARD_H_

#include <cstddef>
#include <span>
#include <string_view>

namespace tailguard::server {

// One file of the dashboard.
struct DashboardAsset {
  std::string_view path;          // the URL path: "/" for index.html, "/assets/<name>" otherwise
  std::string_view content_type;  // e.g. "text/javascript; charset=utf-8"
  std::string_view body;
  std::string_view gzip;  // the same bytes gzip-compressed; empty when not kept
  std::string_view etag;  // a quoted content hash, e.g. "\"3f2a...\""
};

// Every embedded file. Defined in the generated dashboard_assets.cc (web/embed.cmake), linked
// only into the tailguard binary; tests build their own tables.
std::span<const DashboardAsset> DashboardAssets();

// The asset served at `path`, nullptr when there is none.
inline const DashboardAsset* FindDashboardAsset(std::span<const DashboardAsset> assets,
                                                std::string_view path) {
  for (const DashboardAsset& a : assets) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_DASHBOARD_H_
