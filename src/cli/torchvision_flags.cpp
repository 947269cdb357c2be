// torchvision's train.py flags as ddpx flags (see torchvision_flags.hpp; the table is docs/cli.md's).
#include "cli/torchvision_flags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "core/error.hpp"

namespace ddpx::cli {
namespace {

using Kind = TorchvisionFlag::Kind;
using Out = std::vector<std::string>;

std::vector<std::string_view> spellings_of(const TorchvisionFlag& row) {
  std::vector<std::string_view> names;
  std::string_view rest = row.spellings;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    names.push_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return names;
}

std::string_view name_of(const TorchvisionFlag& row) { return spellings_of(row).front(); }

// The value of setting `name` in `all` ("" when it has none).
std::string value_of(const TorchvisionSettings& all, std::string_view name) {
  for (const auto& [key, value] : all)
    if (key == name) return value;
  return "";
}

double number_of(const std::string& text) { return std::strtod(text.c_str(), nullptr); }  // checked on entry

void push(Out& out, std::string_view flag, const std::string& value) {
  out.emplace_back(flag);
  out.push_back(value);
}

// ddpx's flags of the same names take the value as it is.
void same(const char* flag, const std::string& value, Out& out) { push(out, flag, value); }

void data_path(const std::string& dir, const TorchvisionSettings&, Out& out) {
  namespace fs = std::filesystem;
  std::error_code error;
  for (const char* part : {"train", "val"})
    DDPX_REQUIRE(fs::is_directory(fs::path(dir) / part, error),
                 "--data-path {}: torchvision's layout is {}/train/ and {}/val/ (one folder per class in each); "
                 "{}/{} is missing (or give ddpx's --data folder:DIR --val folder:DIR2 instead)",
                 dir, dir, dir, dir, part);
  push(out, "--data", "folder:" + (fs::path(dir) / "train").string());
  push(out, "--val", "folder:" + (fs::path(dir) / "val").string());
}

void optimizer(const std::string& name, const TorchvisionSettings&, Out& out) {
  if (name == "sgd" || name == "adamw") return push(out, "--optimizer", name);
  if (name == "sgd_nesterov") {
    push(out, "--optimizer", "sgd");
    out.emplace_back("--nesterov");
    return;
  }
  fail("--opt {}: ddpx has sgd, sgd_nesterov and adamw (torchvision's rmsprop and others are not built); give "
       "--opt sgd or --opt adamw", name);
}

void lr_scheduler(const std::string& name, const TorchvisionSettings& all, Out& out) {
  // torchvision steps its scheduler once per epoch.
  if (name == "cosineannealinglr") {
    push(out, "--lr-schedule", "cosine");
  } else if (name == "steplr") {
    push(out, "--lr-schedule",
         fmt::format("step:{}:{}", value_of(all, "--lr-step-size"), value_of(all, "--lr-gamma")));
  } else if (name == "exponentiallr") {
    push(out, "--lr-schedule", fmt::format("exponential:{}", value_of(all, "--lr-gamma")));
  } else {
    fail("--lr-scheduler {}: torchvision's train.py has steplr, cosineannealinglr and exponentiallr; give one of "
         "them", name);
  }
  push(out, "--lr-step-unit", "epoch");
}

void warmup_method(const std::string& method, const TorchvisionSettings& all, Out& out) {
  DDPX_REQUIRE(method == "linear" || method == "constant",
               "--lr-warmup-method {}: torchvision's train.py has linear and constant; give one of them", method);
  if (value_of(all, "--lr-warmup-epochs") != "0") push(out, "--lr-warmup-method", method);  // no warm-up: unused
}

void auto_augment(const std::string& policy, const TorchvisionSettings& all, Out& out) {
  if (policy == "ra") return push(out, "--randaugment", "2," + value_of(all, "--ra-magnitude"));
  if (policy == "ta_wide") {
    out.emplace_back("--trivial-augment");
    return;
  }
  if (policy == "imagenet" || policy == "cifar10" || policy == "svhn")
    return push(out, "--auto-augment-policy", policy);
  fail("--auto-augment {}: ddpx has ra (RandAugment), ta_wide (TrivialAugmentWide) and imagenet, cifar10, svhn "
       "(AutoAugment's policies); augmix is not built", policy);
}

void model_ema(const std::string& on, const TorchvisionSettings& all, Out& out) {
  if (on != "true") return;
  push(out, "--ema-decay", value_of(all, "--model-ema-decay"));
  push(out, "--ema-every", value_of(all, "--model-ema-steps"));
  const std::string warmup_epochs = value_of(all, "--lr-warmup-epochs");  // "" where ddpx's spelling gave it
  push(out, "--ema-copy-epochs", warmup_epochs.empty() ? "0" : warmup_epochs);
  push(out, "--ema-adjust", "torchvision");
}

void ra_sampler(const std::string& on, const TorchvisionSettings& all, Out& out) {
  if (on == "true") push(out, "--repeated-augment", value_of(all, "--ra-reps"));
}

void amp(const std::string& on, const TorchvisionSettings& all, Out& out) {
  if (on == "true" && value_of(all, "--device") != "cpu") push(out, "--precision", "bf16");
}

// ddpx's --no-decay zeroes all three; torchvision's None means "as --wd".
void parameter_decays(const std::string&, const TorchvisionSettings& all, Out& out) {
  const std::string wd = value_of(all, "--wd");
  int zero = 0, as_wd = 0;
  std::string mix;
  for (const char* flag : {"--norm-weight-decay", "--bias-weight-decay", "--transformer-embedding-decay"}) {
    const std::string value = value_of(all, flag);
    if (value.empty() || (!wd.empty() && number_of(value) == number_of(wd))) {
      ++as_wd;
    } else if (number_of(value) == 0) {
      ++zero;
    }
    mix += fmt::format("{}{} {}", mix.empty() ? "" : ", ", flag, value.empty() ? "unset" : value);
  }
  if (as_wd == 3) return;  // every parameter decays by --wd
  if (zero + as_wd == 3 && zero > 0) {
    // ddpx's --no-decay exempts biases, norm weights and embeddings together (torchvision's 0 for all three).
    out.emplace_back("--no-decay");
    return;
  }
  fail("{}: ddpx exempts biases, norm weights and the embeddings from decay together (--no-decay) or none of "
       "them; give 0 (or leave unset) for the three, or other values for none", mix);
}

void val_resize(const std::string& side, const TorchvisionSettings&, Out& out) { push(out, "--val-resize", side); }

void interpolation(const std::string& mode, const TorchvisionSettings&, Out&) {
  DDPX_REQUIRE(mode == "bilinear",
               "--interpolation {}: ddpx's loader resizes with antialiased bilinear only (torchvision's default); "
               "give --interpolation bilinear or leave it out", mode);
}

void output_dir(const std::string& dir, const TorchvisionSettings&, Out& out) {
  const std::filesystem::path d(dir);
  push(out, "--checkpoint-dir", dir);
  out.emplace_back("--checkpoint-every-epoch");
  push(out, "--report", (d / "report.json").string());
  push(out, "--metrics", (d / "metrics.jsonl").string());
  push(out, "--save", (d / "model.safetensors").string());
}

void resume(const std::string& from, const TorchvisionSettings&, Out& out) {
  if (from.empty()) return;
  DDPX_REQUIRE(!from.ends_with(".pth") && !from.ends_with(".pt"),
               "--resume {}: ddpx resumes its own checkpoints, not torch.save files: give --resume DIR (the "
               "--output-dir or --checkpoint-dir of an earlier ddpx run) or --resume auto", from);
  push(out, "--resume", from);
}

void random_erase(const std::string& p, const TorchvisionSettings&, Out& out) {
  if (number_of(p) != 0) push(out, "--random-erase", p);  // 0: off, ddpx's default (and not only image sources')
}

// train.py hands momentum to SGD only; ddpx refuses it with AdamW, so AdamW's runs leave the default out.
void momentum(const std::string& m, const TorchvisionSettings& all, Out& out) {
  const std::string opt = value_of(all, "--opt");
  if (opt.empty() || opt.starts_with("sgd")) push(out, "--momentum", m);
}

void print_freq(const std::string& every, const TorchvisionSettings&, Out& out) { push(out, "--log-every", every); }

void positive_crop(const std::string&, const TorchvisionSettings&, Out&) {}  // checked against the model later

// clang-format off
#define SAME(flag) [](const std::string& v, const TorchvisionSettings&, Out& out) { same(flag, v, out); }
const std::vector<TorchvisionFlag> kTable = {
  {"--data-path", Kind::text, "", "--data folder:D/train --val folder:D/val", {"--data", "--val"}, data_path, ""},
  {"--model", Kind::text, "", "--model (ddpx's names; train.py's resnet18 default is not a ddpx model)", {},
    SAME("--model"), ""},
  {"--device", Kind::text, "cuda", "--device (default cuda, as train.py)", {}, SAME("--device"), ""},
  {"--batch-size,-b", Kind::whole, "32", "--batch N (per rank, as torchvision's)", {"--batch"}, SAME("--batch"), ""},
  {"--epochs", Kind::whole, "90", "--epochs", {"--steps"}, SAME("--epochs"), ""},
  {"--workers,-j", Kind::whole, "16", "--workers (loader threads per rank, not processes)", {}, SAME("--workers"), ""},
  {"--opt", Kind::text, "sgd", "--optimizer sgd|adamw (sgd_nesterov: sgd --nesterov)", {"--optimizer"}, optimizer, ""},
  {"--lr", Kind::number, "0.1", "--lr", {}, SAME("--lr"), ""},
  {"--momentum", Kind::number, "0.9", "--momentum (SGD only, as train.py)", {}, momentum, ""},
  {"--wd,--weight-decay", Kind::number, "1e-4", "--weight-decay", {}, SAME("--weight-decay"), ""},
  {"--norm-weight-decay", Kind::number, "", "--no-decay when 0 for all three (unset: as --wd)", {"--no-decay"},
    parameter_decays, ""},
  {"--bias-weight-decay", Kind::number, "", "see --norm-weight-decay", {}, nullptr, ""},
  {"--transformer-embedding-decay", Kind::number, "", "see --norm-weight-decay", {}, nullptr, ""},
  {"--label-smoothing", Kind::number, "0", "--label-smoothing", {}, SAME("--label-smoothing"), ""},
  {"--mixup-alpha", Kind::number, "0", "--mixup", {"--mixup"}, SAME("--mixup"), ""},
  {"--cutmix-alpha", Kind::number, "0", "--cutmix", {"--cutmix"}, SAME("--cutmix"), ""},
  {"--lr-scheduler", Kind::text, "steplr", "--lr-schedule cosine|step:S:G|exponential:G --lr-step-unit epoch",
    {"--lr-schedule"}, lr_scheduler, ""},
  {"--lr-step-size", Kind::whole, "30", "S of step:S:G (epochs)", {}, nullptr, ""},
  {"--lr-gamma", Kind::number, "0.1", "G of step:S:G and exponential:G", {}, nullptr, ""},
  {"--lr-min", Kind::number, "0", "--min-lr", {"--min-lr"}, SAME("--min-lr"), ""},
  {"--lr-warmup-epochs", Kind::whole, "0", "--lr-warmup-epochs", {"--lr-warmup-steps"}, SAME("--lr-warmup-epochs"), ""},
  {"--lr-warmup-method", Kind::text, "constant", "--lr-warmup-method linear|constant", {}, warmup_method, ""},
  {"--lr-warmup-decay", Kind::number, "0.01", "--lr-warmup-start", {"--lr-warmup-start"}, SAME("--lr-warmup-start"),
    ""},
  {"--auto-augment", Kind::text, "",
    "ra: --randaugment 2,M; ta_wide: --trivial-augment; imagenet|cifar10|svhn: --auto-augment-policy P",
    {"--randaugment", "--trivial-augment", "--auto-augment-policy"}, auto_augment, ""},
  {"--ra-magnitude", Kind::whole, "9", "M of --randaugment 2,M", {}, nullptr, ""},
  {"--random-erase", Kind::number, "0", "--random-erase P (given when above 0)", {}, random_erase, ""},
  {"--clip-grad-norm", Kind::number, "", "--clip-grad-norm", {}, SAME("--clip-grad-norm"), ""},
  {"--ra-sampler", Kind::flag, "false", "--repeated-augment N (N = --ra-reps)", {"--repeated-augment"}, ra_sampler, ""},
  {"--ra-reps", Kind::whole, "3", "N of --repeated-augment", {}, nullptr, ""},
  {"--model-ema", Kind::flag, "false",
    "--ema-decay D --ema-every S --ema-copy-epochs <--lr-warmup-epochs> --ema-adjust torchvision", {"--ema-decay"},
    model_ema, ""},
  {"--model-ema-steps", Kind::whole, "32", "S of --ema-every", {}, nullptr, ""},
  {"--model-ema-decay", Kind::number, "0.99998", "D of --ema-decay", {}, nullptr, ""},
  {"--val-resize-size", Kind::whole, "", "--val-resize (unset: int(size / 0.875), 256 at 224 as train.py)",
    {"--val-resize"}, val_resize, ""},
  {"--val-crop-size", Kind::whole, "", "must equal the model's image size (unset: it, 224 as train.py for 224 models)",
    {}, positive_crop, ""},
  {"--train-crop-size", Kind::whole, "", "must equal the model's image size (unset: it)", {}, positive_crop, ""},
  {"--interpolation", Kind::text, "bilinear", "bilinear only", {}, interpolation, ""},
  {"--amp", Kind::flag, "false", "--precision bf16 on cuda (bf16 autocast-like, no grad scaler; fp32 on cpu)",
    {"--precision"}, amp, ""},
  {"--output-dir", Kind::text, "",
    "--checkpoint-dir D --checkpoint-every-epoch --report D/report.json --metrics D/metrics.jsonl --save D/model.safetensors",
    {"--checkpoint-dir", "--report", "--metrics", "--save"}, output_dir, ""},
  {"--resume", Kind::text, "", "--resume DIR|auto (a .pth is refused)", {}, resume, ""},
  {"--test-only", Kind::flag, "false", "`ddpx eval` of --resume's checkpoint or --load's weights on D/val", {}, nullptr,
    ""},
  {"--print-freq", Kind::whole, "10", "--log-every", {"--log-every"}, print_freq, ""},
  {"--seed", Kind::whole, "", "--seed", {}, SAME("--seed"), ""},
  // Not implemented: refused by name with what to use instead.
  {"--weights", Kind::text, "", "", {}, nullptr,
    "ddpx loads weights files, not torchvision's enum names: give --load FILE.safetensors (torchvision's tensor names; --reset-head for another number of classes)"},
  {"--sync-bn", Kind::flag, "", "", {}, nullptr,
    "ddpx's models have no batch norm (ViTs use LayerNorm, per sample); leave it out"},
  {"--cache-dataset", Kind::flag, "", "", {}, nullptr,
    "ddpx scans the folder once per run and keeps no cache; leave it out (ddpx pack writes a packed copy: --data pack:FILE)"},
  {"--use-deterministic-algorithms", Kind::flag, "", "", {}, nullptr,
    "ddpx's CPU engine is deterministic already and its CUDA kernels have no switch; leave it out"},
  {"--backend", Kind::text, "", "", {}, nullptr,
    "ddpx decodes with its own loader (PIL's pixels); ddpx's --backend is the communication backend (gloo, nccl, mpi)"},
  {"--use-v2", Kind::flag, "", "", {}, nullptr, "ddpx's transforms are its own; leave it out"},
  {"--world-size", Kind::whole, "", "", {}, nullptr,
    "ddpx takes the ranks from its launcher: --nproc-per-node N (and --nnodes), or torchrun's"},
  {"--dist-url", Kind::text, "", "", {}, nullptr, "give --master-addr and --master-port (with --nnodes), as torchrun"},
  {"--start-epoch", Kind::whole, "", "", {}, nullptr,
    "a ddpx checkpoint records its step: --resume DIR continues from it"},
  {"--augmix-severity", Kind::whole, "", "", {}, nullptr, "AugMix is not built (--auto-augment augmix is refused)"},
  {"--pretrained", Kind::flag, "", "", {}, nullptr, "give --load FILE.safetensors"},
};
#undef SAME
// clang-format on

// ddpx's own flags of the same spelling (a torchvision command line is one that uses another).
const std::set<std::string_view> kDdpxSpellings = {
    "--model", "--device", "--epochs", "--workers", "--lr", "--momentum", "--weight-decay", "--label-smoothing",
    "--lr-warmup-epochs", "--lr-warmup-method", "--random-erase", "--clip-grad-norm", "--resume", "--seed",
    "--backend"};

const TorchvisionFlag* row_of(std::string_view spelling) {
  for (const TorchvisionFlag& row : kTable)
    for (std::string_view name : spellings_of(row))
      if (name == spelling) return &row;
  return nullptr;
}

// A typed value checked against the row's kind, naming the flag as typed.
std::string checked_value(const TorchvisionFlag& row, std::string_view typed, const std::string& value) {
  if (row.kind == Kind::text) {
    DDPX_REQUIRE(!value.empty(), "{}: give a value", typed);
    return value;
  }
  if (row.kind == Kind::flag) {
    DDPX_REQUIRE(value == "true" || value == "false", "{} is a switch (give it without a value; in a --config "
                 "file: {} = true)", typed, typed.substr(2));
    return value;
  }
  errno = 0;
  char* end = nullptr;
  const double number = std::strtod(value.c_str(), &end);
  const bool parsed = !value.empty() && end == value.c_str() + value.size() && errno == 0 && std::isfinite(number);
  if (row.kind == Kind::number) {
    DDPX_REQUIRE(parsed && number >= 0, "{} '{}': give a number >= 0", typed, value);
    return value;
  }
  DDPX_REQUIRE(parsed && number >= 0 && number == std::floor(number) && value.find_first_of(".eE") == std::string::npos,
               "{} '{}': give a whole number >= 0", typed, value);
  return value;
}

// One torchvision (or ddpx) setting as given: where, and by which spelling.
struct Given {
  std::string spelling, value;
  bool from_config = false;
};

// The setting a spelling belongs to: a torchvision row's name, or for ddpx spellings listed in a row's
// same_setting, that row's name. "" for anything else.
std::string setting_of(std::string_view spelling) {
  if (const TorchvisionFlag* row = row_of(spelling)) return std::string(name_of(*row));
  for (const TorchvisionFlag& row : kTable)
    for (std::string_view ddpx : row.same_setting)
      if (ddpx == spelling) return std::string(name_of(row));
  return "";
}

// "--batch-size=8" -> ("--batch-size", "8"); "-b8" -> ("-b", "8"); "--amp" -> ("--amp", nullopt).
std::pair<std::string, std::optional<std::string>> split_flag(const std::string& arg) {
  if (arg.starts_with("--")) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos) return {arg, std::nullopt};
    return {arg.substr(0, eq), arg.substr(eq + 1)};
  }
  if ((arg.starts_with("-b") || arg.starts_with("-j")) && arg.size() > 2)
    return {arg.substr(0, 2), arg.substr(arg[2] == '=' ? 3 : 2)};
  return {arg, std::nullopt};
}

// The weights --test-only --resume DIR evaluates: DIR/model.safetensors where an --output-dir run saved its final
// weights there, else the folder's newest checkpoint (`ddpx eval` reads a checkpoint without optimizer state).
std::string newest_checkpoint(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(dir, error)) return dir;
  if (fs::is_regular_file(fs::path(dir) / "model.safetensors", error)) return (fs::path(dir) / "model.safetensors").string();
  std::string best;
  long long best_step = -1;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("checkpoint-") || !name.ends_with(".safetensors")) continue;
    const std::string digits = name.substr(11, name.size() - 11 - 12);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long long step = std::atoll(digits.c_str());
    if (step > best_step) best_step = step, best = entry.path().string();
  }
  DDPX_REQUIRE(!best.empty(), "--test-only --resume {}: the folder has no ddpx checkpoint (checkpoint-<step>"
               ".safetensors); give the checkpoint file or --load WEIGHTS", dir);
  return best;
}

}  // namespace

const std::vector<TorchvisionFlag>& torchvision_flags() { return kTable; }

namespace {
TorchvisionTranslation& remembered() {
  static TorchvisionTranslation translation;
  return translation;
}
}  // namespace

void remember_torchvision_translation(TorchvisionTranslation translation) { remembered() = std::move(translation); }
const TorchvisionTranslation& remembered_torchvision_translation() { return remembered(); }

bool translated_config_key(const std::string& key) {
  return remembered().torchvision && key != "backend" && row_of("--" + key) != nullptr;
}

bool is_torchvision_only(std::string_view name) {
  std::string spelling(name);
  if (!spelling.starts_with("-")) spelling = "--" + spelling;
  const TorchvisionFlag* row = row_of(spelling);
  return row != nullptr && !kDdpxSpellings.contains(spelling);
}

std::string TorchvisionTranslation::line() const {
  std::string text = "ddpx train: a torchvision command line (references/classification/train.py's flags and "
                     "defaults; docs/cli.md, \"Coming from torchvision\"); defaults taken:";
  for (const std::string& d : defaults_taken) text += " " + d;
  if (defaults_taken.empty()) text += " none";
  for (const std::string& note : notes) text += "; " + note;
  return text;
}

TorchvisionTranslation translate_torchvision_args(const std::vector<std::string>& args,
                                                  const ConfigReader& read_config) {
  TorchvisionTranslation result;
  result.args = args;
  // Every spelling given, in order, with where it came from: the --config files first, the command line after.
  struct Token {
    std::string spelling;
    std::optional<std::string> value;  // a torchvision row's value; nullopt for ddpx's own flags
    bool from_config = false;
  };
  std::vector<Token> tokens;
  std::vector<std::string> passthrough;  // the command line's arguments that are not torchvision rows
  std::vector<std::string> config_files;
  bool any_torchvision_only = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      passthrough.insert(passthrough.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    const auto [name, attached] = split_flag(arg);
    if (name == "--config") {
      if (attached) config_files.push_back(*attached);
      else if (i + 1 < args.size()) config_files.push_back(args[i + 1]);
    }
    const TorchvisionFlag* row = arg.starts_with("-") ? row_of(name) : nullptr;
    // ddpx's --backend is the communication backend; only torchvision's values (PIL, tensor) are torchvision's.
    if (row != nullptr && name == "--backend") {
      const std::string value = attached ? *attached : (i + 1 < args.size() ? args[i + 1] : "");
      std::string lower = value;
      std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
      if (lower != "pil" && lower != "tensor") row = nullptr;
    }
    if (row == nullptr) {
      if (arg.starts_with("--") && name != "--backend") tokens.push_back({name, std::nullopt, false});
      passthrough.push_back(arg);
      continue;
    }
    // (--backend PIL|tensor is torchvision's only: ddpx's backends are gloo, nccl, mpi.)
    any_torchvision_only = any_torchvision_only || is_torchvision_only(name) || name == "--backend";
    std::string value;
    if (row->kind == Kind::flag) {
      DDPX_REQUIRE(!attached, "{} is a switch: give it without a value", name);
      value = "true";
    } else if (attached) {
      value = *attached;
    } else {
      DDPX_REQUIRE(i + 1 < args.size(), "{} needs a value", name);
      value = args[++i];
    }
    tokens.push_back({name, value, false});
    passthrough.push_back(name);  // placeholder, replaced below when this is a torchvision command line
    if (row->kind != Kind::flag) passthrough.push_back(value);
  }
  // The --config files' keys: torchvision keys make the command line a torchvision one too.
  std::vector<Token> config_tokens;
  for (const std::string& file : config_files) {
    if (!read_config) break;
    for (const ConfigEntry& entry : read_config(file)) {
      const std::string spelling = "--" + entry.key;
      const TorchvisionFlag* row = row_of(spelling);
      if (spelling == "--backend") continue;  // ddpx's communication backend: read_config_for's
      if (row == nullptr) {
        config_tokens.push_back({spelling, std::nullopt, true});
        continue;
      }
      any_torchvision_only = any_torchvision_only || is_torchvision_only(spelling);
      DDPX_REQUIRE(entry.values.size() == 1, "--config {}: key '{}' takes one value", file, entry.key);
      config_tokens.push_back({spelling, entry.values.front(), true});
    }
  }
  if (!any_torchvision_only) return result;  // ddpx's own command line: untouched
  result.torchvision = true;
  tokens.insert(tokens.begin(), config_tokens.begin(), config_tokens.end());

  // Settings: two spellings of one in the same place are refused; the command line wins over a file.
  std::map<std::string, Given> given;
  for (const Token& token : tokens) {
    const std::string setting = setting_of(token.spelling);
    if (setting.empty()) continue;
    const TorchvisionFlag* row = row_of(setting);
    auto it = given.find(setting);
    if (it != given.end() && it->second.from_config == token.from_config && it->second.spelling != token.spelling)
      fail("{} and {}{}: both set {} ({}); give one", it->second.spelling, token.spelling,
           token.from_config ? " (in a --config file)" : "", setting, row->ddpx);
    if (it != given.end() && !it->second.from_config && token.from_config) continue;  // the command line wins
    given[setting] = {token.spelling, token.value ? *token.value : std::string(), token.from_config};
  }
  if (const auto m = given.find("--momentum"), o = given.find("--opt");
      m != given.end() && o != given.end() && o->second.spelling == "--opt" && o->second.value == "adamw")
    fail("--momentum {} with --opt adamw: train.py gives momentum to SGD only (AdamW has betas); leave it out",
         m->second.value);
  // The refused flags, by name.
  for (const auto& [setting, g] : given) {
    const TorchvisionFlag* row = row_of(setting);
    if (!row->refusal.empty()) fail("{} (torchvision's train.py) is not implemented in ddpx: {}", g.spelling, row->refusal);
  }
  // Every row's value: given (a torchvision spelling), given by ddpx's spelling (passes through), or the default.
  TorchvisionSettings& all = result.settings;
  std::set<std::string> native;  // settings given by a ddpx spelling only
  for (const TorchvisionFlag& row : kTable) {
    if (!row.refusal.empty()) continue;
    const std::string name(name_of(row));
    if (auto it = given.find(name); it != given.end()) {
      if (row_of(it->second.spelling) == &row) {
        all.emplace_back(name, checked_value(row, it->second.spelling, it->second.value));
      } else {
        native.insert(name);
      }
      continue;
    }
    if (row.default_value.empty()) continue;
    all.emplace_back(name, std::string(row.default_value));
    if (row.kind != Kind::flag) result.defaults_taken.push_back(fmt::format("{} {}", name, row.default_value));
  }
  // Rows read by another's conversion need the reader to be in effect, and the warm-up epochs count for the EMA
  // only when given by this table's spelling.
  for (const TorchvisionFlag& row : kTable) {
    const std::string name(name_of(row));
    if (!row.convert || native.contains(name) || value_of(all, name).empty()) continue;
    if (name == "--norm-weight-decay") continue;  // below, once for the three
    row.convert(value_of(all, name), all, result.ddpx_args);
  }
  if (!native.contains("--norm-weight-decay")) parameter_decays("", all, result.ddpx_args);

  if (value_of(all, "--amp") == "true" && value_of(all, "--device") == "cpu")
    result.notes.push_back("--amp on --device cpu: fp32 (ddpx's CPU engine has no reduced precision)");
  result.output_dir = value_of(all, "--output-dir");
  result.train_crop = std::atoll(value_of(all, "--train-crop-size").c_str());
  result.val_crop = std::atoll(value_of(all, "--val-crop-size").c_str());

  // The command line: ddpx's own flags in place, the torchvision rows' spellings (and values) dropped, the
  // translated flags first.
  std::vector<std::string> rest;
  for (size_t i = 0; i < passthrough.size(); ++i) {
    const TorchvisionFlag* row = passthrough[i].starts_with("-") ? row_of(passthrough[i]) : nullptr;
    if (row != nullptr && passthrough[i] != "--backend") {
      if (row->kind != Kind::flag) ++i;
      continue;
    }
    rest.push_back(passthrough[i]);
  }
  if (value_of(all, "--test-only") == "true") {
    // torchvision's --test-only: evaluate the checkpoint on the validation set and exit, as `ddpx eval` does.
    result.test_only = true;
    std::string weights = value_of(all, "--resume");
    for (size_t i = 0; i + 1 < rest.size(); ++i)
      if (rest[i] == "--load") weights = rest[i + 1];
    DDPX_REQUIRE(!weights.empty(), "--test-only: give the weights to evaluate: --resume DIR (a ddpx checkpoint "
                 "folder) or --load FILE.safetensors");
    std::vector<std::string> eval = {"eval", "--weights", newest_checkpoint(weights)};
    const std::vector<std::string>& a = result.ddpx_args;
    for (size_t i = 0; i + 1 < a.size(); ++i) {
      if (a[i] == "--val") eval.insert(eval.end(), {"--data", a[i + 1]});
      if (a[i] == "--model" || a[i] == "--device" || a[i] == "--batch" || a[i] == "--precision")
        eval.insert(eval.end(), {a[i], a[i + 1]});
    }
    for (size_t i = 0; i + 1 < rest.size(); ++i)
      if (rest[i] == "--nproc-per-node" || rest[i] == "--nproc_per_node" || rest[i] == "--backend" ||
          rest[i] == "--val" || rest[i] == "--model")
        eval.insert(eval.end(), {rest[i] == "--val" ? "--data" : rest[i], rest[i + 1]});
    result.args = eval;
    return result;
  }
  result.args = result.ddpx_args;
  result.args.insert(result.args.end(), rest.begin(), rest.end());
  return result;
}

std::string torchvision_help_text() {
  std::string text = "torchvision's train.py flags work as typed, with its meanings and defaults (docs/cli.md, "
                     "\"Coming from torchvision\"):";
  std::string line = "  ";
  for (const TorchvisionFlag& row : kTable) {
    if (!row.refusal.empty()) continue;
    std::string spellings(row.spellings);
    std::replace(spellings.begin(), spellings.end(), ',', '/');
    if (line.size() + spellings.size() + 1 > 118) {
      text += "\n" + line;
      line = "  ";
    }
    line += (line.size() > 2 ? " " : "") + spellings;
  }
  return text + "\n" + line;
}

}  // namespace ddpx::cli
