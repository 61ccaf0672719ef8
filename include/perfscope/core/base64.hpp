// Base64 (RFC 4648, with padding): Pyroscope's rawProfile and HTTP basic credentials, and the
// emulated PMU lab's recordings sent over the serial console.
#pragma once

#include <string>
#include <string_view>

namespace perfscope {

std::string base64_encode(std::string_view bytes);

}  // namespace perfscope
