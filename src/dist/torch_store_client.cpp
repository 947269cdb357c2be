// TorchStoreClient: c10d TCPStore wire protocol (both generations) over one TCP connection; see the header.
// A message is a command byte, then arguments: a string or byte vector is a u64 length and the bytes, a key list
// is a u64 count and that many strings. Integers are in the hosts' byte order (little-endian, like the server's).
//   1.13:  SET=0 (key, value; no reply)  GET=2 (key -> vector)  CHECK=4 (keys -> u8 0 ready / 1 not ready)
//          GETNUMKEYS=6 (-> i64)
//   2.x:   VALIDATE=0 (u32 0x3C85F7CE; no reply; must be a connection's first message)  SET=1  GET=3  CHECK=5
//          PING=13 (u32 nonce -> the same u32)
#include "dist/torch_store_client.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "core/error.hpp"
#include "dist/socket_deadline.hpp"

namespace ddpx {
namespace {

using Clock = TorchStoreClient::Clock;

constexpr uint32_t kValidateMagic = 0x3C85F7CE;
constexpr size_t kMaxValueBytes = 1 << 20;
constexpr size_t kMaxKeyBytes = 4096;
// How long a live server may take to answer the handshake before ddpx says it speaks neither protocol.
constexpr auto kHandshakeAnswerLimit = std::chrono::seconds(10);

struct Commands {
  uint8_t set, get, check;
};
constexpr Commands kTorch113{0, 2, 4};
constexpr Commands kTorch2{1, 3, 5};
constexpr uint8_t kTorch2Validate = 0;
constexpr uint8_t kTorch2Ping = 13;
constexpr uint8_t kTorch113GetNumKeys = 6;
constexpr uint8_t kCheckReady = 0;
constexpr uint8_t kCheckNotReady = 1;

const Commands& commands(TorchStoreProtocol protocol) {
  return protocol == TorchStoreProtocol::torch_1_13 ? kTorch113 : kTorch2;
}


void append_u64(std::vector<uint8_t>& out, uint64_t value) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof value);
}

void append_u32(std::vector<uint8_t>& out, uint32_t value) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof value);
}

void append_bytes(std::vector<uint8_t>& out, const void* data, size_t size) {
  append_u64(out, size);
  const auto* bytes = static_cast<const uint8_t*>(data);
  out.insert(out.end(), bytes, bytes + size);
}


// Reads up to `bytes` until the deadline; returns how many arrived (fewer: closed, reset or timed out).
size_t receive_some(int fd, void* data, size_t bytes, Clock::time_point deadline, bool& timed_out) {
  auto* cursor = static_cast<char*>(data);
  size_t done = 0;
  timed_out = false;
  while (done < bytes) {
    pollfd waiter{fd, POLLIN, 0};
    int ready = ::poll(&waiter, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) timed_out = true;
    if (ready <= 0) break;
    ssize_t got = ::recv(fd, cursor + done, bytes - done, 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

std::string seconds_text(std::chrono::milliseconds duration) {
  return fmt::format("{:.1f} s", std::chrono::duration<double>(duration).count());
}

}  // namespace

TorchStoreClient::TorchStoreClient(std::string host, int port, int rank, Clock::time_point deadline)
    : host_(std::move(host)), port_(port), rank_(rank), deadline_(deadline) {
  DDPX_REQUIRE(port_ > 0 && port_ < 65536, "rank {}: MASTER_PORT={} is not a TCP port (1..65535)", rank_, port_);
  connect_socket();
  if (server_answers_torch_2_handshake()) {
    protocol_ = TorchStoreProtocol::torch_2;
    return;
  }
  // The server closed the connection on 2.x's handshake: PyTorch 1.13 does that. Confirm on a fresh connection.
  connection_.reset();
  connect_socket();
  confirm_torch_1_13();
  protocol_ = TorchStoreProtocol::torch_1_13;
}

TorchStoreClient::Connection::~Connection() { reset(); }

void TorchStoreClient::Connection::reset(int new_fd) {
  if (fd >= 0) ::close(fd);
  fd = new_fd;
}

std::string TorchStoreClient::endpoint() const { return host_ + ":" + std::to_string(port_); }

void TorchStoreClient::fail_io(const char* what, const std::string& reason) const {
  fail("rank {}: torchrun's store at MASTER_ADDR:MASTER_PORT = {}: {} failed: {} (is torchrun's agent still "
       "running, and do MASTER_ADDR/MASTER_PORT name its store?)",
       rank_, endpoint(), what, reason);
}

void TorchStoreClient::connect_socket() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(port_);
  const int status = ::getaddrinfo(host_.c_str(), port_text.c_str(), &hints, &found);
  DDPX_REQUIRE(status == 0 && found, "rank {}: cannot resolve MASTER_ADDR '{}' (torchrun's store): {}", rank_,
               host_, gai_strerror(status));
  std::string last_error = "no attempt";
  for (;;) {
    for (addrinfo* candidate = found; candidate; candidate = candidate->ai_next) {
      int fd = ::socket(candidate->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        last_error = std::strerror(errno);
        continue;
      }
      const int error = connect_within(fd, candidate->ai_addr, candidate->ai_addrlen, deadline_);
      if (error == 0) {
        ::freeaddrinfo(found);
        connection_.reset(fd);
        return;
      }
      last_error = std::strerror(error);
      ::close(fd);
    }
    if (remaining_ms(deadline_) == 0) {
      ::freeaddrinfo(found);
      fail("rank {}: could not connect to torchrun's store at MASTER_ADDR:MASTER_PORT = {} before the deadline "
           "(last error: {}); is torchrun's agent running there?",
           rank_, endpoint(), last_error);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, remaining_ms(deadline_))));
  }
}

bool TorchStoreClient::server_answers_torch_2_handshake() {
  // The nonce's third byte is >= 0x80: a 1.13 server reads bytes 1..8 of this message as a SET key length, which
  // is then >= 2^63 and refused before any allocation (a small length would make it allocate and wait).
  const uint32_t nonce = 0x00C00000u | (static_cast<uint32_t>(::getpid()) & 0xFFFFu) |
                         (static_cast<uint32_t>(rank_ & 0x7F) << 24);
  std::vector<uint8_t> hello{kTorch2Validate};
  append_u32(hello, kValidateMagic);
  hello.push_back(kTorch2Ping);
  append_u32(hello, nonce);
  std::string send_error;
  if (!try_send_all(hello, send_error)) return false;  // closed already: what 1.13 would do; confirmed next
  uint32_t echoed = 0;
  bool timed_out = false;
  const auto asked = Clock::now();
  const auto answer_deadline = std::min(deadline_, Clock::now() + kHandshakeAnswerLimit);
  const size_t got = receive_some(connection_.fd, &echoed, sizeof echoed, answer_deadline, timed_out);
  if (got == sizeof echoed && echoed == nonce) return true;
  if (got == 0 && !timed_out) return false;
  if (timed_out)
    fail("rank {}: the server at MASTER_ADDR:MASTER_PORT = {} neither answered PyTorch 2.x's store handshake "
         "nor closed the connection like PyTorch 1.13's store within {}: ddpx speaks the store protocols of "
         "PyTorch 1.13 and 2.x (VALIDATE/PING); is MASTER_PORT torchrun's store?",
         rank_, endpoint(),
         seconds_text(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - asked)));
  fail("rank {}: the server at MASTER_ADDR:MASTER_PORT = {} answered PyTorch 2.x's store ping with {} unexpected "
       "byte(s); is MASTER_PORT torchrun's store?",
       rank_, endpoint(), got);
}

void TorchStoreClient::confirm_torch_1_13() {
  int64_t keys = -1;
  bool timed_out = false;
  size_t got = 0;
  std::string send_error;
  if (try_send_all({kTorch113GetNumKeys}, send_error)) {
    const auto answer_deadline = std::min(deadline_, Clock::now() + kHandshakeAnswerLimit);
    got = receive_some(connection_.fd, &keys, sizeof keys, answer_deadline, timed_out);
  }
  DDPX_REQUIRE(got == sizeof keys && keys >= 0,
               "rank {}: the server at MASTER_ADDR:MASTER_PORT = {} closed the connection on PyTorch 2.x's store "
               "handshake but does not answer like PyTorch 1.13's store either ({}): ddpx speaks the store "
               "protocols of PyTorch 1.13 and 2.x; is MASTER_PORT torchrun's store?",
               rank_, endpoint(), timed_out ? "no answer" : "connection closed");
}

bool TorchStoreClient::try_send_all(const std::vector<uint8_t>& bytes, std::string& error) {
  size_t done = 0;
  while (done < bytes.size()) {
    pollfd waiter{connection_.fd, POLLOUT, 0};
    int ready = ::poll(&waiter, 1, remaining_ms(deadline_));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      error = ready == 0 ? "timed out sending" : std::strerror(errno);
      return false;
    }
    ssize_t sent = ::send(connection_.fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (sent < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (sent <= 0) {
      error = sent < 0 ? std::strerror(errno) : "connection closed";
      return false;
    }
    done += static_cast<size_t>(sent);
  }
  return true;
}

void TorchStoreClient::send_all(const std::vector<uint8_t>& bytes, const char* what) {
  std::string error;
  if (!try_send_all(bytes, error)) fail_io(what, error);
}

void TorchStoreClient::receive_exactly(void* data, size_t bytes, const char* what) {
  bool timed_out = false;
  const size_t got = receive_some(connection_.fd, data, bytes, deadline_, timed_out);
  if (got != bytes) fail_io(what, timed_out ? "no answer before the deadline" : "connection closed by the store");
}

void TorchStoreClient::set(const std::string& key, const std::vector<uint8_t>& value) {
  DDPX_REQUIRE(key.size() <= kMaxKeyBytes && value.size() <= kMaxValueBytes,
               "rank {}: store key '{}' or its {}-byte value is over ddpx's limits ({} and {} bytes)", rank_, key,
               value.size(), kMaxKeyBytes, kMaxValueBytes);
  std::vector<uint8_t> message{commands(protocol_).set};
  append_bytes(message, key.data(), key.size());
  append_bytes(message, value.data(), value.size());
  send_all(message, "SET");
}

bool TorchStoreClient::check(const std::vector<std::string>& keys) {
  std::vector<uint8_t> message{commands(protocol_).check};
  append_u64(message, keys.size());
  for (const std::string& key : keys) append_bytes(message, key.data(), key.size());
  send_all(message, "CHECK");
  uint8_t answer = 0xFF;
  receive_exactly(&answer, 1, "CHECK");
  if (answer != kCheckReady && answer != kCheckNotReady) fail_io("CHECK", fmt::format("answer {}", answer));
  return answer == kCheckReady;
}

std::vector<uint8_t> TorchStoreClient::get(const std::string& key) {
  std::vector<uint8_t> message{commands(protocol_).get};
  append_bytes(message, key.data(), key.size());
  send_all(message, "GET");
  uint64_t length = 0;
  receive_exactly(&length, sizeof length, "GET");
  if (length > kMaxValueBytes + 64) fail_io("GET", fmt::format("a {}-byte value for key '{}'", length, key));
  std::vector<uint8_t> value(length);
  receive_exactly(value.data(), value.size(), "GET");
  return value;
}

std::vector<std::vector<uint8_t>> TorchStoreClient::wait_and_get(const std::vector<std::string>& keys,
                                                                 const std::string& waiting_for) {
  const auto started = Clock::now();
  auto pause = std::chrono::milliseconds(2);
  while (!check(keys)) {
    if (remaining_ms(deadline_) == 0)
      fail("rank {}: timed out after {} waiting in torchrun's store at MASTER_ADDR:MASTER_PORT = {} for {} "
           "(did that rank fail or not start? do all ranks have the same TORCHELASTIC_RUN_ID and WORLD_SIZE?)",
           rank_, seconds_text(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started)),
           endpoint(), waiting_for);
    std::this_thread::sleep_for(std::min(pause, std::chrono::milliseconds(remaining_ms(deadline_))));
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
  std::vector<std::vector<uint8_t>> values;
  values.reserve(keys.size());
  for (const std::string& key : keys) values.push_back(get(key));
  return values;
}

namespace {

// A value is the writer's world size (u32) followed by its bytes, so a reader from another world size notices.
std::vector<uint8_t> with_world_size(int world_size, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> value;
  append_u32(value, static_cast<uint32_t>(world_size));
  value.insert(value.end(), payload.begin(), payload.end());
  return value;
}

std::vector<uint8_t> without_world_size(const TorchStoreExchange& exchange, const TorchStoreClient& client,
                                        int writer, const std::vector<uint8_t>& value) {
  uint32_t writer_world = 0;
  DDPX_REQUIRE(value.size() >= sizeof writer_world,
               "rank {}: torchrun's store at MASTER_ADDR:MASTER_PORT = {} holds a {}-byte value from rank {} under "
               "ddpx's key prefix '{}'; another program wrote it", exchange.rank, client.endpoint(), value.size(),
               writer, exchange.key_prefix);
  std::memcpy(&writer_world, value.data(), sizeof writer_world);
  DDPX_REQUIRE(static_cast<int>(writer_world) == exchange.world_size,
               "rank {}: rank {} has WORLD_SIZE={} but this rank has WORLD_SIZE={}; every rank of one torchrun job "
               "must see the same world size", exchange.rank, writer, writer_world, exchange.world_size);
  return std::vector<uint8_t>(value.begin() + sizeof writer_world, value.end());
}

void require_exchange(const TorchStoreExchange& exchange, size_t payload_size) {
  DDPX_REQUIRE(exchange.world_size >= 1 && exchange.rank >= 0 && exchange.rank < exchange.world_size,
               "torchrun store exchange: RANK={} is not within WORLD_SIZE={}", exchange.rank, exchange.world_size);
  DDPX_REQUIRE(payload_size <= kMaxValueBytes - 4, "rank {}: a {}-byte payload is over the store limit of {} bytes",
               exchange.rank, payload_size, kMaxValueBytes - 4);
}

}  // namespace

std::vector<uint8_t> torch_store_broadcast(const TorchStoreExchange& exchange, const std::vector<uint8_t>& payload) {
  require_exchange(exchange, payload.size());
  if (exchange.world_size == 1) return payload;
  TorchStoreClient client(exchange.host, exchange.port, exchange.rank, Clock::now() + exchange.timeout);
  const std::string key = exchange.key_prefix + "/from-rank-0";
  if (exchange.rank == 0) {
    client.set(key, with_world_size(exchange.world_size, payload));
    return payload;
  }
  std::vector<std::vector<uint8_t>> values = client.wait_and_get({key}, "rank 0's payload (key '" + key + "')");
  return without_world_size(exchange, client, 0, values[0]);
}

std::vector<std::vector<uint8_t>> torch_store_allgather(const TorchStoreExchange& exchange,
                                                        const std::vector<uint8_t>& mine) {
  require_exchange(exchange, mine.size());
  if (exchange.world_size == 1) return {mine};
  TorchStoreClient client(exchange.host, exchange.port, exchange.rank, Clock::now() + exchange.timeout);
  std::vector<std::string> keys;
  keys.reserve(static_cast<size_t>(exchange.world_size));
  for (int r = 0; r < exchange.world_size; ++r) keys.push_back(exchange.key_prefix + "/rank-" + std::to_string(r));
  client.set(keys[static_cast<size_t>(exchange.rank)], with_world_size(exchange.world_size, mine));

  std::vector<std::vector<uint8_t>> values;
  try {
    values = client.wait_and_get(keys, "every rank's part of an all-gather");
  } catch (const Error&) {
    // Name the ranks that are missing: one CHECK per rank (the first 16 listed) on a fresh connection, since the
    // deadline may have cut the last exchange in half, with a short deadline of its own.
    TorchStoreClient prober(exchange.host, exchange.port, exchange.rank, Clock::now() + std::chrono::seconds(5));
    std::string missing;
    int listed = 0;
    for (int r = 0; r < exchange.world_size && listed < 16; ++r)
      if (!prober.check({keys[static_cast<size_t>(r)]})) missing += (listed++ ? ", " : "") + std::to_string(r);
    fail("rank {}: timed out after {} waiting in torchrun's store at MASTER_ADDR:MASTER_PORT = {} for rank(s) "
         "{} of {} (did they fail or not start? do all ranks have the same TORCHELASTIC_RUN_ID?)",
         exchange.rank, seconds_text(exchange.timeout), client.endpoint(), missing.empty() ? "?" : missing,
         exchange.world_size);
  }
  for (int r = 0; r < exchange.world_size; ++r)
    values[static_cast<size_t>(r)] = without_world_size(exchange, client, r, values[static_cast<size_t>(r)]);
  return values;
}

}  // namespace ddpx
