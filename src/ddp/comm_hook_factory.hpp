// The factory that builds the hook a --comm-hook spec names. What each hook is (name, syntax, help, arguments,
// lossy or not, whether it reads its buckets, its wire messages) is data in the hook catalogue
// (comm_plan/hook_catalogue.hpp), which this header brings along; only the building lives here, in ddp, beside
// the hooks' classes. Adding a hook: its class, its row in the catalogue, its case in make_comm_hook().
// Guarantees: make_comm_hook(spec)->name() == spec.text().
#pragma once
#include <memory>
#include <string_view>

#include "comm_plan/hook_catalogue.hpp"
#include "ddp/comm_hook.hpp"

namespace ddpx {

std::unique_ptr<CommHook> make_comm_hook(const CommHookSpec& spec);
// parse_comm_hook_spec then make_comm_hook (for tools and tests that hold the text).
std::unique_ptr<CommHook> make_comm_hook(std::string_view text);

}  // namespace ddpx
