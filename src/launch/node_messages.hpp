// The multi-node launchers' control-channel messages (one text line each) and the proofs that authenticate them.
// See Note [Authenticated control channel] in node_messages.cpp, and docs/design.md ("Multi-node launcher").
//   0 -> r   CHALLENGE <nonce>                                   (at once, to every connection)
//   r -> 0   JOIN ddpx-launch-2 <nnodes> <node rank> <nproc> <nonce> <proof>
//   0 -> r   START <job nonce> <proof>  |  REFUSE <message>
//   both     PING
//   r -> 0   FAIL <priority 0..2> <exit status 1..255> <message>  |  DONE
//   0 -> r   ABORT <exit status 1..255> <message>  |  END
// Nonces are 32 lowercase hex digits (128 random bits), proofs 64 (HMAC-SHA-256 with the shared secret).
// Guarantees: every parse_*() checks every field (the keyword, the field count, decimal integers in their ranges,
// nonce and proof lengths and digits) and returns nullopt for anything else; none throws or reads past its line.
// Proofs are compared in constant time. workers_token() is what the workers' rendezvous uses as DDPX_JOB_TOKEN: a
// function of the secret and the job's nonce, so it never crosses the network.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace ddpx::node_job {

inline constexpr const char* kProtocol = "ddpx-launch-2";
inline constexpr int kMaxNodes = 65536;
inline constexpr int kMaxProcsPerNode = 4096;

std::string random_nonce();  // 128 bits from std::random_device, hex

struct Join {
  int nnodes = 0, node_rank = 0, nproc = 0;
  std::string nonce, proof;
};
struct Start {
  std::string job_nonce, proof;
};
struct Fail {
  int priority = 0, exit_code = 1;
  std::string message;
};
struct Abort {
  int exit_code = 1;
  std::string message;
};

std::optional<std::string> parse_challenge(std::string_view line);  // the nonce
// A JOIN of this protocol (node_rank may be out of this job's range: the caller checks it against --nnodes).
std::optional<Join> parse_join(std::string_view line);
std::optional<Start> parse_start(std::string_view line);
std::optional<Fail> parse_fail(std::string_view line);
std::optional<Abort> parse_abort(std::string_view line);
// "REFUSE <message>" -> the message.
std::optional<std::string> parse_refuse(std::string_view line);

std::string join_line(const std::string& secret, const std::string& challenge, int nnodes, int node_rank, int nproc,
                      const std::string& nonce);
bool join_proof_holds(const std::string& secret, const std::string& challenge, const Join& join);
std::string start_line(const std::string& secret, const std::string& join_nonce, const std::string& job_nonce);
bool start_proof_holds(const std::string& secret, const std::string& join_nonce, const Start& start);
std::string workers_token(const std::string& secret, const std::string& job_nonce);

}  // namespace ddpx::node_job
