// How every `ddpx ... --help` reads: lines of at most 120 characters (descriptions wrapped beside the flag
// column), a flag's value shown as its plain type (INT, FLOAT, TEXT: never CLI11's "INT:INT" or "in [1 - 1024]:INT")
// with its default at the end of its description, and under each command its own examples (never the global list
// of the top-level help, which CLI11 copies into every subcommand).
// Guarantees: apply_help_format() changes only how help is printed, never what is parsed. A command without an
// entry in the examples table (help_format.cpp) gets a pointer to `ddpx --help` instead of the global examples; a
// command that set its own footer keeps it.
#pragma once
#include <CLI/CLI.hpp>

#include <string>

namespace ddpx::cli {

constexpr size_t kHelpWidth = 120;

// Wraps each paragraph of `text` (split at '\n') at spaces so that no line exceeds `width`; a word longer than
// `width` stands on a line of its own.
std::string wrap_text(const std::string& text, size_t width);

// The text up to the end of its first sentence (". ", not after "e.g" or "i.e"), its line breaks made spaces: what
// the list of commands shows of a description (a description's first line may end mid-sentence).
std::string first_sentence(const std::string& text);

// Call after every subcommand is registered.
void apply_help_format(CLI::App& root);

}  // namespace ddpx::cli
