#pragma once
// The commit this binary was built from (git's short hash, "-dirty" when the sources differed from
// it, "unknown" outside a git checkout): generated at build time by cmake/build_info.cmake.

namespace verbatim {
const char* build_commit();
}  // namespace verbatim
