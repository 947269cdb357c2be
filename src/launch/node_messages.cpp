// The control channel's messages and proofs (see node_messages.hpp).
//
// Note [Authenticated control channel]
// Node 0's launcher used to answer any connection that sent `JOIN <protocol> N R G` with `START <job token>`: a
// stranger got the token in clear, joined the workers' rendezvous with it, and the job trained with its process;
// once joined it could send FAIL and stop the job; a node rank of -1 or 2^31-1 indexed past node 0's table. Now
// every node holds a shared secret (DDPX_JOB_TOKEN, required off loopback as the workers' rendezvous requires it)
// and proves it without sending it: node 0 sends a fresh nonce first, the joining node answers with its JOIN and
// HMAC-SHA-256(secret, the challenge, its fields, its own nonce); node 0 answers START with the job's nonce and
// HMAC(secret, the joining node's nonce, the job nonce), so the joining node knows node 0 holds the secret too,
// and each side derives the workers' token as HMAC(secret, "workers", job nonce). Nothing secret crosses the
// network; a replayed JOIN fails (the challenge is fresh), a replayed START fails (the node's nonce is fresh).
// A connection that does not prove the secret, or sends anything malformed, is that connection's end: node 0 drops
// it (saying why on its stderr) and the job goes on. After the handshake, messages travel on the authenticated TCP
// connection; a malformed one from a node that proved the secret is that node failing, named in the verdict.
// Without a secret (loopback, or DDPX_ALLOW_NO_TOKEN=1 on a trusted network) the key is empty: the handshake still
// runs, proving nothing, as documented.
#include "launch/node_messages.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <charconv>
#include <limits>
#include <cstdio>
#include <random>
#include <vector>

#include "core/error.hpp"

namespace ddpx::node_job {
namespace {

constexpr size_t kNonceDigits = 32, kProofDigits = 64;

std::string hex(const unsigned char* bytes, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (size_t i = 0; i < n; ++i) {
    text += kDigits[bytes[i] >> 4];
    text += kDigits[bytes[i] & 15];
  }
  return text;
}

std::string hmac(const std::string& secret, const std::string& message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  const unsigned char* key = reinterpret_cast<const unsigned char*>(secret.data());
  static const unsigned char kEmptyKey = 0;
  const unsigned char* result =
      HMAC(EVP_sha256(), secret.empty() ? &kEmptyKey : key, static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
  DDPX_REQUIRE(result != nullptr && length == 32, "launcher: HMAC-SHA-256 failed in OpenSSL");
  return hex(digest, length);
}

bool same_proof(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool lower_hex(std::string_view text, size_t digits) {
  if (text.size() != digits) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// Splits at single spaces into exactly `fields` parts, the last one taking the rest of the line when `rest`.
std::optional<std::vector<std::string_view>> fields_of(std::string_view line, size_t fields, bool rest) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < fields) {
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    parts.push_back(line.substr(0, space));
    line.remove_prefix(space + 1);
  }
  if (!rest && line.find(' ') != std::string_view::npos) return std::nullopt;
  parts.push_back(line);
  return parts;
}

// A decimal integer in [low, high]: digits with an optional leading '-', nothing else.
std::optional<int> integer_in(std::string_view text, int low, int high) {
  if (text.empty() || text.size() > 11) return std::nullopt;
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < low || value > high) return std::nullopt;
  return value;
}

std::string join_message(const std::string& challenge, int nnodes, int node_rank, int nproc,
                         const std::string& nonce) {
  return "JOIN|" + std::string(kProtocol) + "|" + challenge + "|" + std::to_string(nnodes) + "|" +
         std::to_string(node_rank) + "|" + std::to_string(nproc) + "|" + nonce;
}

}  // namespace

std::string random_nonce() {
  std::random_device device;
  unsigned char bytes[16];
  for (unsigned char& byte : bytes) byte = static_cast<unsigned char>(device());
  return hex(bytes, sizeof bytes);
}

std::optional<std::string> parse_challenge(std::string_view line) {
  const auto parts = fields_of(line, 2, false);
  if (!parts || (*parts)[0] != "CHALLENGE" || !lower_hex((*parts)[1], kNonceDigits)) return std::nullopt;
  return std::string((*parts)[1]);
}

std::optional<Join> parse_join(std::string_view line) {
  const auto parts = fields_of(line, 7, false);
  if (!parts || (*parts)[0] != "JOIN" || (*parts)[1] != kProtocol) return std::nullopt;
  const auto nnodes = integer_in((*parts)[2], 1, kMaxNodes);
  const auto node_rank = integer_in((*parts)[3], std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
  const auto nproc = integer_in((*parts)[4], 1, kMaxProcsPerNode);
  if (!nnodes || !node_rank || !nproc || !lower_hex((*parts)[5], kNonceDigits) ||
      !lower_hex((*parts)[6], kProofDigits))
    return std::nullopt;
  return Join{*nnodes, *node_rank, *nproc, std::string((*parts)[5]), std::string((*parts)[6])};
}

std::optional<Start> parse_start(std::string_view line) {
  const auto parts = fields_of(line, 3, false);
  if (!parts || (*parts)[0] != "START" || !lower_hex((*parts)[1], kNonceDigits) ||
      !lower_hex((*parts)[2], kProofDigits))
    return std::nullopt;
  return Start{std::string((*parts)[1]), std::string((*parts)[2])};
}

std::optional<Fail> parse_fail(std::string_view line) {
  const auto parts = fields_of(line, 4, true);
  if (!parts || (*parts)[0] != "FAIL") return std::nullopt;
  const auto priority = integer_in((*parts)[1], 0, 2);
  const auto code = integer_in((*parts)[2], 1, 255);
  if (!priority || !code) return std::nullopt;
  return Fail{*priority, *code, std::string((*parts)[3])};
}

std::optional<Abort> parse_abort(std::string_view line) {
  const auto parts = fields_of(line, 3, true);
  if (!parts || (*parts)[0] != "ABORT") return std::nullopt;
  const auto code = integer_in((*parts)[1], 1, 255);
  if (!code) return std::nullopt;
  return Abort{*code, std::string((*parts)[2])};
}

std::optional<std::string> parse_refuse(std::string_view line) {
  const auto parts = fields_of(line, 2, true);
  if (!parts || (*parts)[0] != "REFUSE") return std::nullopt;
  return std::string((*parts)[1]);
}

std::string join_line(const std::string& secret, const std::string& challenge, int nnodes, int node_rank, int nproc,
                      const std::string& nonce) {
  return "JOIN " + std::string(kProtocol) + " " + std::to_string(nnodes) + " " + std::to_string(node_rank) + " " +
         std::to_string(nproc) + " " + nonce + " " +
         hmac(secret, join_message(challenge, nnodes, node_rank, nproc, nonce));
}

bool join_proof_holds(const std::string& secret, const std::string& challenge, const Join& join) {
  return same_proof(join.proof, hmac(secret, join_message(challenge, join.nnodes, join.node_rank, join.nproc,
                                                          join.nonce)));
}

std::string start_line(const std::string& secret, const std::string& join_nonce, const std::string& job_nonce) {
  return "START " + job_nonce + " " + hmac(secret, "START|" + join_nonce + "|" + job_nonce);
}

bool start_proof_holds(const std::string& secret, const std::string& join_nonce, const Start& start) {
  return same_proof(start.proof, hmac(secret, "START|" + join_nonce + "|" + start.job_nonce));
}

std::string workers_token(const std::string& secret, const std::string& job_nonce) {
  return hmac(secret, "WORKERS|" + job_nonce).substr(0, 32);
}

}  // namespace ddpx::node_job
