// The viewer application (viewer/ in the source tree), embedded at build time by
// cmake/EmbedFiles.cmake.
#pragma once

#include <string_view>

namespace perfscope::cli::viewer_assets {

extern const std::string_view index_html, page_table_js, app_js, app_css;

}  // namespace perfscope::cli::viewer_assets
