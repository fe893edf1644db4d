// SPDX-License-Identifier: Apache-2.0
#include "lib/common/connection_table.h"

#include <gtest/gtest.h>

namespace efawatch::common {
namespace {

using namespace std::chrono_literals;
using TimePoint = ConnectionTable::TimePoint;

const TimePoint kT0 = TimePoint{} + 1h;

ConnectionLimits Limits(size_t total, size_t per_peer, std::chrono::milliseconds deadline = 5s) {
  return {.total = total, .per_peer = per_peer, .request_deadline = deadline};
}

TEST(ConnectionTableTest, AdmitsWithinBoundsWithoutEvicting) {
  ConnectionTable t(Limits(3, 2));
  for (ConnectionTable::Id id : {1, 2}) {
    const auto a = t.Admit(id, "10.0.0.1", kT0);
    EXPECT_TRUE(a.admitted);
    EXPECT_FALSE(a.evicted.has_value());
  }
  EXPECT_TRUE(t.Admit(3, "10.0.0.2", kT0).admitted);
  EXPECT_EQ(t.size(), 3u);
}

TEST(ConnectionTableTest, NewcomerFromAPeerAtItsBoundReplacesThatPeersLongestWaiter) {
  ConnectionTable t(Limits(100, 2));
  t.Admit(1, "10.0.0.1", kT0);
  t.Admit(2, "10.0.0.9", kT0 - 1s);  // another peer, waiting longer still: not a candidate
  t.Admit(3, "10.0.0.1", kT0 + 1s);
  const auto a = t.Admit(4, "10.0.0.1", kT0 + 2s);
  EXPECT_TRUE(a.admitted);
  ASSERT_TRUE(a.evicted.has_value());
  EXPECT_EQ(*a.evicted, 1u);
  EXPECT_EQ(t.size(), 3u);
}

TEST(ConnectionTableTest, NewcomerToAFullTableReplacesTheLongestWaiterOfAnyPeer) {
  ConnectionTable t(Limits(3, 3));
  t.Admit(1, "10.0.0.1", kT0 + 1s);
  t.Admit(2, "10.0.0.2", kT0);
  t.Admit(3, "10.0.0.3", kT0 + 2s);
  const auto a = t.Admit(4, "10.0.0.4", kT0 + 3s);
  EXPECT_TRUE(a.admitted);
  ASSERT_TRUE(a.evicted.has_value());
  EXPECT_EQ(*a.evicted, 2u);
}

TEST(ConnectionTableTest, BusyConnectionsAreNeverEvictedAndANewcomerIsRefusedInstead) {
  ConnectionTable t(Limits(2, 2));
  t.Admit(1, "10.0.0.1", kT0);
  t.Admit(2, "10.0.0.1", kT0);
  t.Busy(1);
  t.Busy(2);
  const auto a = t.Admit(3, "10.0.0.1", kT0 + 1s);
  EXPECT_FALSE(a.admitted);
  EXPECT_FALSE(a.evicted.has_value());
  EXPECT_EQ(t.size(), 2u);
  // Once one answer is sent, that connection waits again and may make room.
  t.Waiting(2, kT0 + 2s);
  const auto b = t.Admit(3, "10.0.0.1", kT0 + 3s);
  EXPECT_TRUE(b.admitted);
  EXPECT_EQ(b.evicted, std::optional<ConnectionTable::Id>(2));
}

TEST(ConnectionTableTest, WaitersPastTheDeadlineAreTakenOnceBusyOnesStay) {
  ConnectionTable t(Limits(10, 10, 5s));
  t.Admit(1, "a", kT0);
  t.Admit(2, "a", kT0 + 3s);
  t.Admit(3, "b", kT0);
  t.Busy(3);
  EXPECT_TRUE(t.TakeExpired(kT0 + 4s).empty());
  EXPECT_EQ(t.TakeExpired(kT0 + 5s), std::vector<ConnectionTable::Id>{1});
  EXPECT_TRUE(t.TakeExpired(kT0 + 5s).empty());  // taken means removed
  // A keep-alive connection's wait restarts when its answer is sent.
  t.Waiting(2, kT0 + 7s);
  EXPECT_TRUE(t.TakeExpired(kT0 + 11s).empty());
  EXPECT_EQ(t.TakeExpired(kT0 + 12s), std::vector<ConnectionTable::Id>{2});
  EXPECT_TRUE(t.TakeExpired(kT0 + 1h).empty());  // 3 is serving a request
  EXPECT_EQ(t.size(), 1u);
}

TEST(ConnectionTableTest, ZeroDeadlineNeverExpires) {
  ConnectionTable t(Limits(10, 10, 0ms));
  t.Admit(1, "a", kT0);
  EXPECT_TRUE(t.TakeExpired(kT0 + 24h).empty());
}

TEST(ConnectionTableTest, ClosingFreesThePeersShareAndUnknownIdsAreIgnored) {
  ConnectionTable t(Limits(10, 1));
  t.Admit(1, "a", kT0);
  t.Busy(1);
  EXPECT_FALSE(t.Admit(2, "a", kT0).admitted);
  t.Closed(1);
  t.Closed(1);
  t.Closed(42);
  t.Busy(42);
  t.Waiting(42, kT0);
  const auto a = t.Admit(2, "a", kT0);
  EXPECT_TRUE(a.admitted);
  EXPECT_FALSE(a.evicted.has_value());
  EXPECT_EQ(t.size(), 1u);
}

TEST(ConnectionTableTest, AFloodFromOnePeerNeverLocksOutAnother) {
  // 500 idle connections from one address, as in a half-open attack: the table stays at its
  // bounds, and a scraper from another address is admitted without evicting anyone.
  ConnectionTable t(Limits(256, 64));
  for (ConnectionTable::Id id = 0; id < 500; ++id) {
    EXPECT_TRUE(t.Admit(id, "attacker", kT0 + std::chrono::milliseconds(id)).admitted);
  }
  EXPECT_EQ(t.size(), 64u);
  const auto a = t.Admit(1000, "scraper", kT0 + 1s);
  EXPECT_TRUE(a.admitted);
  EXPECT_FALSE(a.evicted.has_value());
  // And one from the attacker's own address too, in place of the attacker's longest waiter.
  const auto b = t.Admit(1001, "attacker", kT0 + 2s);
  EXPECT_TRUE(b.admitted);
  EXPECT_EQ(b.evicted, std::optional<ConnectionTable::Id>(436));
}

}  // namespace
}  // namespace efawatch::common
