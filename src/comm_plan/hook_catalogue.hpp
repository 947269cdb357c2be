// The communication hooks' catalogue: what each --comm-hook is, as data, and the --comm-hook spec parsed once.
// It depends on core only (and on the bucket plan beside it), so ddp's factory, the trainer, `tune`, the verdict
// and `ddpx predict` all ask this one table and none of them re-derives a hook's properties from its spelling.
// Adding a hook is its class in ddp/, one row in comm_hooks() (hook_catalogue.cpp) and the case that builds it
// in make_comm_hook() (ddp/comm_hook_factory.cpp, a switch over HookKind, so a row without a case does not
// compile cleanly); --help, the error for an unknown hook, the canonical spelling, whether it is lossy, whether it
// reads its buckets and what it puts on the wire all come from the row (docs/design.md, "Adding a hook").
// Spellings: "allreduce", "fp16", "bf16", "powersgd:R" or "powersgd:R:START" (R = matrix approximation rank,
// START = first compressed step). --powersgd-start N is the other spelling of START: parse_comm_hook_spec() takes
// it as the default for "powersgd:R", and an explicit START wins.
// Guarantees: text() is the canonical spelling (every argument spelled, "powersgd:R:START"), equal to the built
// hook's name(), and parse_comm_hook_spec(text()) == the spec. Errors name the flag (--comm-hook unless the caller
// names another), the text and the choices.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "comm_plan/bucket_plan.hpp"

namespace ddpx {

// One per catalogue row; ddp's factory switches on it to build the hook.
enum class HookKind { allreduce, fp16, bf16, powersgd };

// What one bucket puts on the wire at a step where the hook does its full work.
enum class WireForm {
  fp32,      // the bucket's span, 4 bytes an element, one call
  half,      // the span cast to 16 bits, 2 bytes an element, one call
  low_rank,  // PowerSGD's factors (powersgd_layout.hpp): uncompressed tensors with every P, then every Q
};

// Defaults that flags other than --comm-hook give to a hook's arguments.
struct CommHookDefaults {
  int64_t powersgd_start = 2;  // --powersgd-start
};

struct CommHookSpec {
  std::string name = "allreduce";  // a comm_hooks() entry
  std::vector<int64_t> args;       // its arguments, canonical (defaults filled in): powersgd: {R, START}
  std::string text() const;        // the canonical spelling, what run reports and the start-up agreement record
  bool operator==(const CommHookSpec&) const = default;
};

struct CommHookEntry {
  HookKind kind;
  std::string_view name;    // "powersgd"
  std::string_view syntax;  // "powersgd:R[:START]", as --help and errors show it
  std::string_view help;    // what it does, in a few words
  WireForm wire;
  // It changes what training computes beyond rounding (a low-rank approximation): `ddpx tune` tries it only when
  // listed under --allow-lossy.
  bool lossy;
  // Whether it reads or writes its buckets in a job of one rank. False only where the average is the bucket itself
  // and the hook issues nothing (allreduce): the trainer may then keep the gradients in a form no hook could read
  // (Note [bf16 weight gradients in their fp32 slots], model_cuda/cuda_model.hpp). At two or more ranks every hook
  // reads its buckets.
  bool reads_bucket_alone;
  // How many leading arguments change what crosses the wire at a full step (powersgd: 1, R; START says only from
  // when): wire_shape() keeps these, which is how `ddpx predict` tells hooks apart.
  size_t wire_args;
  // The canonical arguments from the text after the name ("" or ":..."); `text` is the whole spec and `flag` the
  // flag it came from, for errors.
  std::vector<int64_t> (*parse_args)(std::string_view flag, std::string_view text, std::string_view args,
                                     const CommHookDefaults& defaults);
};

// The catalogue, in the order --help lists the hooks.
const std::vector<CommHookEntry>& comm_hooks();
// The row of a parsed spec (an internal fault if the spec names none: specs come from parse_comm_hook_spec).
const CommHookEntry& comm_hook_entry(const CommHookSpec& spec);
// The row whose name starts `text` (up to its first ':'), or nullptr.
const CommHookEntry* find_comm_hook(std::string_view text);
// "allreduce | fp16 | bf16 | powersgd:R[:START]": the syntaxes, for help texts and errors.
std::string comm_hook_syntaxes(std::string_view separator = " | ");

CommHookSpec parse_comm_hook_spec(std::string_view text, const CommHookDefaults& defaults = {},
                                  std::string_view flag = "--comm-hook");
// default_powersgd_start: START for "powersgd:R" (--powersgd-start).
CommHookSpec parse_comm_hook_spec(std::string_view text, int64_t default_powersgd_start);

// The row's facts, for a spec.
bool comm_hook_is_lossy(const CommHookSpec& spec);
// Whether it rounds or approximates the gradients on the wire (every hook but allreduce): what `ddpx predict` and
// `ddpx tune` warn about when they recommend it. Wider than comm_hook_is_lossy, which fp16 and bf16 are not.
bool comm_hook_compresses(const CommHookSpec& spec);
bool comm_hook_reads_bucket(const CommHookSpec& spec, int world);
// The spec with only its wire_args: "powersgd:4:7" -> "powersgd:4"; the others unchanged.
CommHookSpec wire_shape(const CommHookSpec& spec);

// PowerSGD's rule for which matrices compress (powersgd_layout.hpp), PyTorch's default.
inline constexpr double kPowerSgdMinCompressionRate = 2.0;

// The byte sizes of bucket `bucket`'s collective calls, in the order the hook makes them, at a step where it does
// its full work: fp32, one call of the span (padding included) at 4 bytes an element; half, at 2; low_rank, two
// calls (the uncompressed tensors with every P, then every Q, fp32), or one of the uncompressed tensors when no
// matrix of the bucket compresses. Their sum is what the built hook's wire_bytes() reports at such a step.
std::vector<int64_t> comm_hook_wire_messages(const CommHookSpec& spec, const BucketPlan& plan, size_t bucket);

}  // namespace ddpx
