// TorchStoreClient: a client of the key-value store (c10d's TCPStore) that torchrun's agent serves on
// MASTER_ADDR:MASTER_PORT when it tells its workers TORCHELASTIC_USE_AGENT_STORE=True, and two exchanges over it.
// See docs/design.md ("Under torchrun") for why ddpx talks to torchrun's store instead of opening a port of its own.
// Guarantees:
//  - Speaks the two wire protocols in use: PyTorch 1.13's (no handshake; SET=0 GET=2 CHECK=4) and PyTorch 2.x's
//    (first message VALIDATE=0 with the magic 0x3C85F7CE, then PING=13; SET=1 GET=3 CHECK=5). It tells them apart
//    by the server's answer to 2.x's handshake (a 2.x server echoes the ping; 1.13 reads the bytes as a SET whose
//    key length exceeds 2^63, rejects it before allocating and closes the connection), then confirms 1.13 on a new
//    connection with GETNUMKEYS. A server that does neither is a ddpx::Error saying so; nothing is guessed.
//  - Every operation ends by the deadline (connect included: retried until then, since the agent may still be
//    starting). Waiting for keys polls CHECK (every 2..100 ms), so an abandoned wait leaves no state in the server.
//  - Every failure is a ddpx::Error naming "torchrun's store at MASTER_ADDR:MASTER_PORT = host:port", the rank,
//    and what to check. Values are limited to 1 MiB, keys to 4 KiB (the 2.x server's limits are 8 MiB and 8 KiB).
//  - Writes only the keys the caller names; never deletes or changes others (the agent's own keys stay intact).
//  - One client is one TCP connection; not thread-safe (use one per thread). After an error it must not be used
//    again (a reply may still be in flight); make a new one.
// The exchanges (keys under `key_prefix`, each value carrying the writer's world size, which readers check):
//  - torch_store_broadcast: rank 0 sets its payload; the others wait for it and get it.
//  - torch_store_allgather: every rank sets its own key; all wait for all and get them in rank order. At the
//    timeout it takes at most 5 s more (a fresh connection) to name the ranks whose keys are missing.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ddpx {

enum class TorchStoreProtocol { torch_1_13, torch_2 };

class TorchStoreClient {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects to host:port as `rank` (for messages) and detects the protocol; throws ddpx::Error by the deadline.
  TorchStoreClient(std::string host, int port, int rank, Clock::time_point deadline);
  TorchStoreClient(const TorchStoreClient&) = delete;
  TorchStoreClient& operator=(const TorchStoreClient&) = delete;

  TorchStoreProtocol protocol() const { return protocol_; }
  std::string endpoint() const;  // "host:port"
  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }

  void set(const std::string& key, const std::vector<uint8_t>& value);
  bool check(const std::vector<std::string>& keys);  // true when every key exists
  std::vector<uint8_t> get(const std::string& key);  // the key must exist (check first)
  // Waits until every key exists, then returns their values in order. `waiting_for` says in a timeout message
  // what the keys stand for ("rank 0's payload").
  std::vector<std::vector<uint8_t>> wait_and_get(const std::vector<std::string>& keys,
                                                 const std::string& waiting_for);

 private:
  void connect_socket();
  bool server_answers_torch_2_handshake();
  void confirm_torch_1_13();
  bool try_send_all(const std::vector<uint8_t>& bytes, std::string& error);
  void send_all(const std::vector<uint8_t>& bytes, const char* what);
  void receive_exactly(void* data, size_t bytes, const char* what);
  [[noreturn]] void fail_io(const char* what, const std::string& reason) const;

  std::string host_;
  int port_ = 0;
  int rank_ = 0;
  Clock::time_point deadline_;
  struct Connection {  // owns the socket, so a constructor that throws still closes it
    int fd = -1;
    ~Connection();
    void reset(int new_fd = -1);
  };
  Connection connection_;
  TorchStoreProtocol protocol_ = TorchStoreProtocol::torch_2;
};

struct TorchStoreExchange {
  std::string host;  // MASTER_ADDR
  int port = 0;      // MASTER_PORT
  int rank = 0;
  int world_size = 1;
  std::string key_prefix;  // every key the exchange writes starts with it; unique per exchange and job attempt
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
};

// Rank 0 passes the payload and gets it back; the other ranks get rank 0's payload.
std::vector<uint8_t> torch_store_broadcast(const TorchStoreExchange& exchange, const std::vector<uint8_t>& payload);
// Every rank passes its own bytes; all get every rank's bytes, index = rank.
std::vector<std::vector<uint8_t>> torch_store_allgather(const TorchStoreExchange& exchange,
                                                        const std::vector<uint8_t>& mine);

}  // namespace ddpx
