// Node channel: the TCP connections between the launchers of a multi-node job (node 0's launcher serves, the
// others connect), carrying one text line per message. See docs/design.md, "Multi-node launcher", for the protocol.
// Guarantees:
//  - resolve_ipv4() turns a --master-addr (name or dotted quad) into one IPv4 address or raises a ddpx::Error
//    naming the flag and the resolver's reason.
//  - listen_on() binds only the given address (never all interfaces); a port in use or an address that is not
//    this host's is a ddpx::Error naming --master-port or --master-addr and what to do. require_port_free() makes
//    the same check for a port someone else will bind later (the workers' rendezvous).
//  - connect_within() retries until the deadline (node 0 may start later) and returns -1 when it passed.
//  - LineConnection never blocks: receive() takes what has arrived (also after a failed send, so a peer's last
//    words before it closed are not lost) and hands back complete lines (at most
//    kMaxLineBytes each; a longer line is a broken peer, reported as a lost connection); send() writes a whole
//    line (messages are tiny, so the socket buffer takes them; a failed write marks the connection lost).
#pragma once
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace ddpx {

inline constexpr size_t kMaxLineBytes = 8192;

std::string resolve_ipv4(const std::string& host);
int listen_on(const std::string& address, int port);
void require_port_free(const std::string& address, int port, std::string_view what);
int connect_within(const std::string& address, int port, std::chrono::steady_clock::time_point deadline,
                   std::string& last_error);
// The peer's IPv4 address of a connected socket ("?" if unknown).
std::string peer_address(int fd);

class LineConnection {
 public:
  explicit LineConnection(int fd = -1);
  ~LineConnection();
  LineConnection(LineConnection&& other) noexcept;
  LineConnection& operator=(LineConnection&& other) noexcept;
  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0 && !lost_; }
  // Reads what is there; appends complete lines. False once the peer closed, failed or sent garbage.
  bool receive(std::vector<std::string>& lines);
  bool send(std::string_view line);
  void close();
  std::chrono::steady_clock::time_point last_heard() const { return last_heard_; }

 private:
  int fd_ = -1;
  bool lost_ = false;
  std::string pending_;
  std::chrono::steady_clock::time_point last_heard_ = std::chrono::steady_clock::now();
};

}  // namespace ddpx
