// Internal invariants: a broken one is a bug in shardline, never a user's input error (those are
// InputError, core/error.h). Checked in every build, the release build included (where assert()
// is compiled out): the broken rule and its place go to stderr and the process aborts, so a bug
// never turns into a plausible-looking wrong number or a silent default.
#pragma once

namespace shardline {

[[noreturn]] void invariant_broken(const char* what, const char* file, int line);

}  // namespace shardline

// SHARDLINE_CHECK(condition, "what must hold"): aborts naming `what` when `condition` is false.
#define SHARDLINE_CHECK(condition, what) \
  ((condition) ? static_cast<void>(0) : ::shardline::invariant_broken(what, __FILE__, __LINE__))
// SHARDLINE_UNREACHABLE("why this cannot happen"): a place no valid state reaches.
#define SHARDLINE_UNREACHABLE(what) ::shardline::invariant_broken(what, __FILE__, __LINE__)
