// The line an interrupted run prints (see interrupt_notice.hpp).
#include "train/interrupt_notice.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <utility>

#include "core/internal_assert.hpp"

namespace ddpx {
namespace {

constexpr size_t kLineBytes = 8192;
char g_lines[2][kLineBytes];
size_t g_lengths[2] = {0, 0};
std::atomic<int> g_current{-1};  // the buffer the handler writes; -1: no notice installed
struct sigaction g_previous_int, g_previous_term;

void write_all(const char* text, size_t length) {
  while (length > 0) {
    const ssize_t written = ::write(STDERR_FILENO, text, length);
    if (written <= 0) return;
    text += written;
    length -= static_cast<size_t>(written);
  }
}

void on_signal(int signal_number) {
  const char* name = signal_number == SIGINT ? "\nddpx train: interrupted (SIGINT): " : "\nddpx train: stopped (SIGTERM): ";
  const int current = g_current.load();
  if (current >= 0) {
    write_all(name, std::strlen(name));
    write_all(g_lines[current], g_lengths[current]);
  }
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

std::string shell_quoted(const std::string& arg) {
  const bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./:=,+@%", c) != nullptr;
  });
  if (plain) return arg;
  std::string quoted = "'";
  for (const char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

std::string continue_command(const std::vector<std::string>& argv, bool has_resume, bool has_checkpoint_dir) {
  if (argv.empty() || !has_checkpoint_dir) return "";
  std::string command;
  for (const std::string& arg : argv) command += (command.empty() ? "" : " ") + shell_quoted(arg);
  return has_resume ? command : command + " --resume auto";
}

InterruptNotice::InterruptNotice(InterruptContext context, int64_t start_step)
    : context_(std::move(context)), step_(start_step) {
  DDPX_INTERNAL_ASSERT(g_current.load() < 0, "two InterruptNotices at once");
  publish();
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &g_previous_int);
  ::sigaction(SIGTERM, &action, &g_previous_term);
}

InterruptNotice::~InterruptNotice() {
  ::sigaction(SIGINT, &g_previous_int, nullptr);
  ::sigaction(SIGTERM, &g_previous_term, nullptr);
  g_current.store(-1);
}

void InterruptNotice::reached(int64_t step) {
  step_ = step;
  publish();
}

void InterruptNotice::checkpoint(int64_t step) {
  checkpoint_step_ = step;
  publish();
}

std::string InterruptNotice::line() const {
  std::string text = fmt::format("step {} of {} done; ", step_, context_.total_steps);
  if (context_.checkpoint_dir.empty())
    return text + "no checkpoint (no --checkpoint-dir): a rerun starts at step 0; give --checkpoint-dir DIR "
                  "--resume auto to make the run resumable\n";
  if (checkpoint_step_ < 0)
    text += fmt::format("no checkpoint in {} yet, so continuing starts at step 0", context_.checkpoint_dir);
  else
    text += fmt::format("newest checkpoint: {} (step {})", context_.checkpoint_dir, checkpoint_step_);
  return text + (context_.continue_command.empty()
                     ? (context_.has_resume ? "; continue with the same command\n"
                                            : "; continue with the same command and --resume auto\n")
                     : fmt::format("; continue with: {}\n", context_.continue_command));
}

void InterruptNotice::publish() {
  const int spare = g_current.load() == 0 ? 1 : 0;
  const std::string text = line();
  const size_t length = std::min(text.size(), kLineBytes);
  std::memcpy(g_lines[spare], text.data(), length);
  g_lengths[spare] = length;
  g_current.store(spare);
}

}  // namespace ddpx
