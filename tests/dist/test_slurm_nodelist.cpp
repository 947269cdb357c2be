// Slurm host lists: a table of compressed lists and their hosts, and malformed lists that must fail naming the
// variable and the problem.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "dist/slurm_nodelist.hpp"

namespace ddpx {
namespace {

struct ListCase {
  const char* list;
  std::vector<std::string> hosts;
};

TEST(SlurmNodelist, ExpandsEveryForm) {
  const std::vector<ListCase> cases = {
      {"vm", {"vm"}},
      {"node01", {"node01"}},
      {"node[01-04,07]", {"node01", "node02", "node03", "node04", "node07"}},
      {"a[1-2],b3", {"a1", "a2", "b3"}},
      {"rack[1-2]-n[01-02]", {"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}},
      {"n[08-10]", {"n08", "n09", "n10"}},
      {"n[8-10]", {"n8", "n9", "n10"}},
      {"gpu[7]", {"gpu7"}},
      {"x[001-002]y", {"x001y", "x002y"}},
      {"c1.cluster.org,c2.cluster.org", {"c1.cluster.org", "c2.cluster.org"}},
      {"my_host-1,h[0-1]", {"my_host-1", "h0", "h1"}},
  };
  for (const ListCase& c : cases) {
    EXPECT_EQ(expand_hosts(c.list, "SLURM_JOB_NODELIST"), c.hosts) << c.list;
    EXPECT_EQ(first_host(c.list, "SLURM_JOB_NODELIST"), c.hosts.front()) << c.list;
  }
}

TEST(SlurmNodelist, FirstHostOfAHugeListWithoutExpandingIt) {
  EXPECT_EQ(first_host("n[000000000-999999999]", "SLURM_JOB_NODELIST"), "n000000000");
  EXPECT_THROW(expand_hosts("n[0-999999]", "SLURM_JOB_NODELIST", 1000), Error);
}

struct BadCase {
  const char* list;
  const char* problem;  // expected in the message
};

TEST(SlurmNodelist, MalformedListsNameTheVariableAndTheProblem) {
  const std::vector<BadCase> cases = {
      {"", "it is empty"},
      {"node[01-04", "never closed"},
      {"node01]", "closes no '['"},
      {"node[]", "empty number"},
      {"node[4-1]", "runs backwards"},
      {"node[a-b]", "expected a number"},
      {"node[1-]", "expected a number"},
      {"node[1,,2]", "expected a number"},
      {"node[1[2]]", "a '[' inside"},
      {"a,,b", "empty host name"},
      {"a,b,", "ends with a comma"},
      {",a", "empty host name"},
      {"node 1", "belongs in no host name"},
      {"[1-2]", "without a host name"},
      {"n[1-99999999999]", "too large"},
      {"n[1;2]", "no digit"},
  };
  for (const BadCase& c : cases) {
    try {
      (void)first_host(c.list, "SLURM_STEP_NODELIST");
      ADD_FAILURE() << "accepted '" << c.list << "'";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(std::string("SLURM_STEP_NODELIST='") + c.list + "'"), std::string::npos) << message;
      EXPECT_NE(message.find(c.problem), std::string::npos) << c.list << ": " << message;
    }
  }
}

}  // namespace
}  // namespace ddpx
