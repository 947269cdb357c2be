// Help text layout and per-command examples (see help_format.hpp).
#include "cli/help_format.hpp"

#include "cli/torchvision_flags.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

namespace ddpx::cli {
namespace {

constexpr size_t kFlagColumn = 32;

// Each command's examples: what a newcomer types first, then the variations that matter.
const std::map<std::string, std::string>& command_examples() {
  static const std::map<std::string, std::string> examples = {
      {"model",
       "  ddpx model --list                                   the model families and names\n"
       "  ddpx model --model vit_l_32                         tensor table and parameter count\n"},
      {"eval",
       "  ddpx eval --model vit_tiny_test --weights w.safetensors --images x.npy --labels y.npy\n"
       "  ddpx eval --model vit_b_16 --weights w.safetensors --images x.npy --out logits.npy --device cuda\n"},
      {"train",
       "  ddpx train --device cpu --model vit_small_test --data learnable --steps 100\n"
       "  ddpx train --device cuda --model vit_l_32 --precision bf16 --steps 100 --report run.json\n"
       "  ddpx train --device cuda --nproc-per-node 2 --comm-hook bf16 --bucket-mb 25\n"
       "  ddpx train ... --checkpoint-dir ck --checkpoint-every 100 --resume auto   restartable\n"
       "  torchrun --nproc_per_node 2 --max_restarts 3 --no_python ddpx train --device cuda ... --resume auto\n"
       "  ddpx train --config best.cfg                        flags from a file (ddpx tune writes one)\n"
       "Outputs (--save, --report, --trace, checkpoints) are written atomically; see docs/cli.md for the policy.\n"},
      {"report",
       "  ddpx report run.json                                breakdown, bandwidth and verdict of a saved run\n"
       "  ddpx report run.json --peak peak.json --trace run.trace.json\n"
       "  ddpx report --check-trace run.trace.json            every track well nested and in order\n"
       "  ddpx report run.json --metrics m.jsonl --html page.html   the run's page with its training curves\n"
       "  ddpx report --metrics m.jsonl --csv m.csv           the --metrics lines as CSV for a spreadsheet\n"},
      {"data-preview",
       "  ddpx data-preview folder:DIR --out grid.png         16 training images as the model gets them\n"
       "  ddpx data-preview folder:DIR/val --eval --out val.png --dump x.npy --dump-labels y.npy\n"},
      {"topo",
       "  ddpx topo                                           GPU links and the NCCL transport per pair\n"
       "  ddpx topo --json topo.json\n"},
      {"allreduce",
       "  ddpx allreduce --nproc-per-node 2 --sizes 1K:1G     nccl-tests-like bus bandwidth table\n"
       "  ddpx allreduce --nproc-per-node 8 -b 8 -e 1G -f 2   nccl-tests' own flags\n"
       "  ddpx allreduce --device cpu --nproc-per-node 2 --json peak.json\n"},
      {"bench",
       "  ddpx bench --precisions fp32,bf16 --hooks allreduce,bf16 --gpus 1,2\n"
       "  ddpx bench --device cpu --models vit_small_test --hooks allreduce,bf16 --bucket-mb 1,100\n"},
      {"tune",
       "  ddpx tune --out best.cfg -- --model vit_l_32 --device cuda   then: ddpx train --config best.cfg\n"
       "  ddpx tune --repeats 5 --out best.json -- --model vit_tiny_test --device cpu --steps 30\n"},
  };
  return examples;
}

std::string clean_type_name(const CLI::Option& option) {
  // CLI11 appends each validator's description with ':'; the plain type is the all-capitals part.
  std::stringstream parts(option.get_type_name());
  std::string part;
  while (std::getline(parts, part, ':')) {
    if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); }))
      return part;
  }
  return "VALUE";
}

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() { column_width(kFlagColumn); }

  std::string make_option_opts(const CLI::Option* option) const override {
    if (!option->get_option_text().empty()) return " " + option->get_option_text();
    std::string text;
    if (option->get_type_size() != 0 && !option->get_type_name().empty()) {  // flags have no type name
      text += " " + clean_type_name(*option);
      if (option->get_expected_max() == CLI::detail::expected_max_vector_size) text += " ...";
      if (option->get_required()) text += " (required)";
    }
    return text;
  }

  std::string make_option_desc(const CLI::Option* option) const override {
    std::string text = option->get_description();
    const std::string& fallback = option->get_default_str();
    if (option->get_type_size() != 0 && !option->get_type_name().empty() && !fallback.empty() && fallback != "\"\"" &&
        text.find("(default") == std::string::npos)
      text += " (default " + fallback + ")";
    return wrap_text(text, kHelpWidth - kFlagColumn);
  }

  // In the list of commands: the first sentence of each command's description, wrapped beside the name.
  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             wrap_text(first_sentence(sub->get_description()), kHelpWidth - kFlagColumn),
                             kFlagColumn);
    return out.str();
  }

  std::string make_description(const CLI::App* app) const override {
    return wrap_text(CLI::Formatter::make_description(app), kHelpWidth);
  }
};

}  // namespace

std::string first_sentence(const std::string& text) {
  std::string flat = text;
  std::replace(flat.begin(), flat.end(), '\n', ' ');
  for (size_t end = flat.find(". "); end != std::string::npos; end = flat.find(". ", end + 1)) {
    const std::string before = flat.substr(0, end);
    if (before.ends_with("e.g") || before.ends_with("i.e") || before.ends_with("etc")) continue;  // not an end
    return flat.substr(0, end + 1);
  }
  return flat;
}

std::string wrap_text(const std::string& text, size_t width) {
  std::string out;
  std::stringstream paragraphs(text);
  std::string paragraph;
  bool first_paragraph = true;
  while (std::getline(paragraphs, paragraph, '\n')) {
    if (!first_paragraph) out += '\n';
    first_paragraph = false;
    size_t indent = 0;  // a paragraph's leading spaces carry to its wrapped lines
    while (indent < paragraph.size() && paragraph[indent] == ' ') ++indent;
    std::stringstream words(paragraph.substr(indent));
    std::string word, line(indent, ' ');
    bool line_has_word = false;
    while (words >> word) {
      if (line_has_word && line.size() + 1 + word.size() > width) {
        out += line + '\n';
        line = std::string(indent, ' ');
        line_has_word = false;
      }
      line += (line_has_word ? " " : "") + word;
      line_has_word = true;
    }
    out += line;
  }
  if (!text.empty() && text.back() == '\n') out += '\n';
  return out;
}

void apply_help_format(CLI::App& root) {
  const auto formatter = std::make_shared<HelpFormatter>();
  root.formatter(formatter);
  const std::string global_footer = root.get_footer();
  for (CLI::App* sub : root.get_subcommands([](CLI::App*) { return true; })) {
    sub->formatter(formatter);
    if (sub->get_footer() != global_footer) continue;  // the command wrote its own
    const auto examples = command_examples().find(sub->get_name());
    std::string footer = examples == command_examples().end() ? "" : "Examples:\n" + examples->second;
    if (sub->get_name() == "train") footer += torchvision_help_text() + "\n";
    footer += "Run 'ddpx --help' for every command and the exit statuses.";
    sub->footer(footer);
  }
}

}  // namespace ddpx::cli
