// What the core tests share: the check that a call throws shardline's one input-error type at a
// given JSON path or flag with the given words in its message.
#pragma once
#include <initializer_list>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"

namespace shardline::coretest {

// Runs `fn`, expects an InputError at `where` whose message contains every one of `parts`.
template <typename Fn>
void expect_input_error(Fn fn, const std::string& where, std::initializer_list<std::string> parts = {}) {
  try {
    fn();
    FAIL() << "expected InputError at " << where;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), where) << e.what();
    for (const auto& p : parts) EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr(p)) << "where " << where;
  }
}

}  // namespace shardline::coretest
