// Free TCP ports for a launcher or a test to listen on. A port is only known free at the moment it was checked;
// what this adds over bind-to-port-0 is (a) runs of consecutive ports (ddpx's node launcher listens on
// --master-port and --master-port + 1), checked while all of them are held, and (b) ports chosen below the
// kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), so no outgoing connection on this host is
// handed one of them between the check and the listen. Note [Ports outside the ephemeral range]: a port from
// bind(0) lies inside that range, where every connect() on the host draws its source port; with many tests
// connecting at once, port + 1 of such a port was taken by a client socket in CI (Launcher.TwoNodesOnLoopback).
#pragma once

#include <string>

namespace ddpx {

// Ports low .. high, both included.
struct PortRange {
  int low = 0;
  int high = 0;
};

// The first of `count` consecutive TCP ports on `address` (an IPv4 address) that were all free a moment ago.
// Tries random runs inside [10000, start of the ephemeral range) first, then kernel-assigned bases; throws a user
// error naming the address when none is found.
int find_free_ports(const std::string& address, int count);

// The same with the random runs drawn inside `preferred` (runs that do not fit in it are not drawn).
int find_free_ports_in(const std::string& address, int count, PortRange preferred);

// The first port of the kernel's ephemeral range (32768, Linux's default, when it cannot be read).
int ephemeral_port_range_start();

// One free port: find_free_ports(address, 1).
int find_free_port(const std::string& address = "127.0.0.1");

}  // namespace ddpx
