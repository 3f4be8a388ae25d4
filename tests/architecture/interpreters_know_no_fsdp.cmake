# DESIGN.md: the scheduler is the only place that knows FSDP; the interpreters (sim/, exec/)
# read the Program's tables (docs/program.md). This fails when their code (comments aside)
# names an FSDP concept: the scheduler's enums, shards, replicas, buckets, FSDP itself. The
# Program's own slice fields (shard_offset, shard_numel: a range of a rank's local block of a
# parameter) are its vocabulary and allowed.
# Run: cmake -DSOURCE_DIR=<repo> -P interpreters_know_no_fsdp.cmake
cmake_minimum_required(VERSION 3.20)
set(FORBIDDEN "CommGroup::|CommGroup[ &>]|StreamId|MemoryKind|StoreKind|[Ss]hard|[Rr]eplicate|[Ff]sdp|FSDP|HSDP|[Bb]ucket|average_gradients")

file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR}
     ${SOURCE_DIR}/sim/*.h ${SOURCE_DIR}/sim/*.cpp
     ${SOURCE_DIR}/exec/*.h ${SOURCE_DIR}/exec/*.cpp ${SOURCE_DIR}/exec/*.cu)
list(LENGTH sources count)
if(count LESS 20)
  message(FATAL_ERROR "found only ${count} sim/ and exec/ sources under ${SOURCE_DIR}: wrong SOURCE_DIR?")
endif()
set(offences "")
foreach(f ${sources})
  file(STRINGS ${SOURCE_DIR}/${f} lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    string(REGEX REPLACE "//.*$" "" code "${line}")
    string(REPLACE "shardline" "" code "${code}")
    # The Program's slice fields: a range of the rank's local block of a parameter.
    string(REGEX REPLACE "shard_offset|shard_numel" "" code "${code}")
    if(code MATCHES "${FORBIDDEN}")
      string(APPEND offences "\n  ${f}:${n}: ${line}")
    endif()
  endforeach()
endforeach()
if(offences)
  message(FATAL_ERROR "sim/ or exec/ code names an FSDP concept (state it in the Program instead):${offences}")
endif()
message(STATUS "checked ${count} sim/ and exec/ sources")
