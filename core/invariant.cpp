#include "core/invariant.h"

#include <cstdio>
#include <cstdlib>

namespace shardline {

void invariant_broken(const char* what, const char* file, int line) {
  std::fprintf(stderr, "shardline: internal error (a bug, please report it): %s (%s:%d)\n", what, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace shardline
