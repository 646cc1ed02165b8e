#pragma once
// API-key check for --api-key.
#include <string_view>

namespace verbatim::server {

// True when a == b. Its time depends only on the lengths, never on where the first differing
// byte is, so response timing leaks nothing about the key.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace verbatim::server
