// The factory over the hook catalogue (see comm_hook_factory.hpp).
#include "ddp/comm_hook_factory.hpp"

#include "core/internal_assert.hpp"
#include "ddp/allreduce_hook.hpp"
#include "ddp/cast_hook.hpp"
#include "ddp/powersgd_hook.hpp"

namespace ddpx {

std::unique_ptr<CommHook> make_comm_hook(const CommHookSpec& spec) {
  switch (comm_hook_entry(spec).kind) {
    case HookKind::allreduce: return std::make_unique<AllreduceHook>();
    case HookKind::fp16: return std::make_unique<CastHook>(WireFormat::fp16);
    case HookKind::bf16: return std::make_unique<CastHook>(WireFormat::bf16);
    case HookKind::powersgd: return PowerSgdHook::make(spec.args);
  }
  DDPX_INTERNAL_FAIL("hook '{}' has a catalogue row but no case in make_comm_hook", spec.text());
}

std::unique_ptr<CommHook> make_comm_hook(std::string_view text) { return make_comm_hook(parse_comm_hook_spec(text)); }

}  // namespace ddpx
