// The version and commit of this build (see build_info.hpp); the only file that includes the generated header.
#include "core/build_info.hpp"

#include "ddpx_build_info.hpp"

namespace ddpx {

std::string ddpx_version() { return DDPX_VERSION_TEXT; }
std::string ddpx_commit() { return DDPX_COMMIT_TEXT; }

}  // namespace ddpx
