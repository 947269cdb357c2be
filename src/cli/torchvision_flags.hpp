// torchvision's references/classification/train.py command line, accepted by `ddpx train` as it is typed, with
// train.py's meanings and defaults (issue 50 item 1; docs/cli.md, "Coming from torchvision").
// How: translate_torchvision_args() runs on `ddpx train`'s arguments before ddpx parses them (argv in, ddpx argv
// out), so ddpx's own parse, its checks and the --config path see one command line. ONE table,
// torchvision_flags(), holds every torchvision flag: its spellings, its value type, train.py's default, the ddpx
// flags it sets and how its value converts (or why it is refused and what to use instead).
// Guarantees:
//  - A command line (or a --config file) that uses no flag only torchvision spells comes back unchanged.
//  - One that does is a "torchvision command line": every torchvision setting it leaves out takes train.py's
//    default (the defaults taken are listed in the translation's line()); its flags become ddpx flags per the
//    table; flags ddpx already spells the same way (--lr, --model, --epochs, ...) keep their place.
//  - Two spellings of one setting in one place (-b and --batch-size, -b and --batch, --data-path and --val) are an
//    Error naming both; between a --config file and the command line, the command line wins, as everywhere.
//  - Every torchvision flag ddpx does not implement, and every value it does not (--auto-augment augmix,
//    --interpolation bicubic, --opt rmsprop, a .pth --resume), is an Error naming the flag and what to use instead;
//    none is silently ignored. A bad number is an Error naming the torchvision flag.
//  - Reads only the --config files (through the reader given) and the folders --data-path and --test-only --resume
//    name; writes nothing, prints nothing (`ddpx train` prints line() on rank 0 and creates --output-dir).
//  - --test-only turns the command into `ddpx eval` of the run's weights on D/val (args then start with "eval").
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ddpx::cli {

// One key = value(s) of a --config file, the key without dashes ("batch-size").
struct ConfigEntry {
  std::string key;
  std::vector<std::string> values;
};
using ConfigReader = std::function<std::vector<ConfigEntry>(const std::string& file)>;

// The torchvision settings in effect (given or defaulted), by torchvision's long spelling ("--batch-size").
using TorchvisionSettings = std::vector<std::pair<std::string, std::string>>;

// A torchvision flag: one row of the table.
struct TorchvisionFlag {
  enum class Kind { number, whole, text, flag };  // a float, an int, a string, store_true
  std::string_view spellings;      // "--batch-size,-b": the first is the setting's name
  Kind kind;
  std::string_view default_value;  // train.py's default; "" where it has none (None, or not applicable)
  std::string_view ddpx;           // what it sets, for docs and help: "--batch N (per rank, as torchvision)"
  // The ddpx flags that are spellings of the same setting (giving one of them too is refused as two spellings);
  // empty: the flag has the same name in ddpx, or sets nothing of its own.
  std::vector<std::string_view> same_setting;
  // Appends the ddpx arguments for this setting's value; `all` holds every setting in effect (a flag like
  // --lr-scheduler reads --lr-step-size and --lr-gamma). nullptr: read by another row (--lr-step-size).
  // Throws ddpx::Error for a value ddpx does not implement.
  void (*convert)(const std::string& value, const TorchvisionSettings& all, std::vector<std::string>& out);
  std::string_view refusal;        // non-empty: not implemented; the Error's text says what to use instead
};
const std::vector<TorchvisionFlag>& torchvision_flags();

// True when `name` ("--batch-size", "-b", or a --config key "batch-size") is a torchvision spelling ddpx itself
// does not have (what makes a command line a torchvision one).
bool is_torchvision_only(std::string_view name);

struct TorchvisionTranslation {
  bool torchvision = false;          // a torchvision command line (see the header)
  std::vector<std::string> args;     // what ddpx parses: `args` unchanged when !torchvision
  std::vector<std::string> ddpx_args;   // the ddpx flags the torchvision settings became, in table order
  TorchvisionSettings settings;      // every torchvision setting in effect, given or train.py's default
  std::vector<std::string> defaults_taken;  // "--lr 0.1", ... the settings left out
  std::vector<std::string> notes;    // said once at the start (--amp on the CPU)
  std::string output_dir;            // --output-dir: to create before the run ("" without one)
  int64_t train_crop = 0, val_crop = 0;  // given: to equal the model's image size (0: not given)
  bool test_only = false;            // --test-only: evaluate and exit (args then start with "eval")
  // The one line rank 0 prints at the start: that this is a torchvision command line, and the defaults it took.
  std::string line() const;
};

// `args`: the arguments after `train` (argv[2..]); `read_config` reads a --config file's entries.
TorchvisionTranslation translate_torchvision_args(const std::vector<std::string>& args,
                                                  const ConfigReader& read_config);

// main() translates `ddpx train`'s arguments once and keeps the result here for the train command (the line it
// prints, the run report's record, the crop check) and the --config reader.
void remember_torchvision_translation(TorchvisionTranslation translation);
const TorchvisionTranslation& remembered_torchvision_translation();
// True when the remembered translation is a torchvision one and read this --config key ("batch-size", "lr"):
// read_config_for leaves it alone (its value reached ddpx's parse as translated flags).
bool translated_config_key(const std::string& key);

// The short list of accepted spellings for `ddpx train --help`.
std::string torchvision_help_text();

}  // namespace ddpx::cli
