// The libcurl transport of PushClient (library perfscope_push_curl): HTTP and HTTPS with the
// system's CA certificates, redirects not followed (a base address that moved is a configuration
// error to report, not to follow with credentials).
#pragma once

#include <memory>

#include "perfscope/analysis/push/push_client.hpp"

namespace perfscope {

// `ca_file`: PEM certificates to check HTTPS servers against instead of the system's (empty).
std::unique_ptr<HttpTransport> make_curl_transport(std::string ca_file = {});

}  // namespace perfscope
