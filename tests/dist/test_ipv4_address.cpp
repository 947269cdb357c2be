// parse_ipv4 / ipv4_socket_address: dotted quads only, network byte order, and nothing else accepted.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include "dist/ipv4_address.hpp"

namespace ddpx {
namespace {

TEST(Ipv4Address, ParsesDottedQuadsInNetworkOrder) {
  const std::optional<in_addr> loopback = parse_ipv4("127.0.0.1");
  ASSERT_TRUE(loopback.has_value());
  EXPECT_EQ(ntohl(loopback->s_addr), 0x7f000001u);
  const std::optional<in_addr> netns = parse_ipv4("10.77.0.2");
  ASSERT_TRUE(netns.has_value());
  EXPECT_EQ(ntohl(netns->s_addr), (10u << 24) | (77u << 16) | 2u);
}

TEST(Ipv4Address, RefusesWhatIsNotADottedQuad) {
  for (const char* text : {"", "localhost", "1.2.3", "1.2.3.256", "::1", " 127.0.0.1", "127.0.0.1:29500"})
    EXPECT_FALSE(parse_ipv4(text).has_value()) << "'" << text << "'";
}

TEST(Ipv4Address, SocketAddressCarriesFamilyAddressAndPort) {
  const sockaddr_in address = ipv4_socket_address(*parse_ipv4("192.168.1.20"), 29501);
  EXPECT_EQ(address.sin_family, AF_INET);
  EXPECT_EQ(ntohs(address.sin_port), 29501);
  char text[INET_ADDRSTRLEN] = {};
  ASSERT_NE(::inet_ntop(AF_INET, &address.sin_addr, text, sizeof text), nullptr);
  EXPECT_STREQ(text, "192.168.1.20");
  EXPECT_EQ(ntohs(ipv4_socket_address(*parse_ipv4("127.0.0.1"), 0).sin_port), 0);  // the kernel's choice
}

}  // namespace
}  // namespace ddpx
