# Runs the driver with rank 1 stalled before its first collective and --timeout 3, and checks
# that the run fails (not hangs), names rank, op and stream, and leaves partial timelines.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(
  COMMAND ${MPIRUN} --allow-run-as-root --oversubscribe --bind-to none -n 2 ${DRIVER} --shard 2 --timeout 3
          --stall-rank 1 --partial-dir ${WORK}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 45)
message(STATUS "exit: ${rc}\nstdout:\n${out}\nstderr:\n${err}")
if(rc EQUAL 0 OR rc MATCHES "timeout")
  message(FATAL_ERROR "the stalled run did not fail by itself (exit: ${rc})")
endif()
if(NOT err MATCHES "rank 1 made no progress for 3 s")
  message(FATAL_ERROR "no message naming the stalled rank 1")
endif()
if(NOT err MATCHES "rank 0 made no progress.*op [0-9]+ \"ag fwd u0 b0\" \\(all_gather over the shard group\\) on stream all_gather did not complete")
  message(FATAL_ERROR "rank 0's message does not name the stuck op and its stream")
endif()
foreach(r 0 1)
  if(NOT EXISTS ${WORK}/timeline.partial.rank${r}.json)
    message(FATAL_ERROR "rank ${r} wrote no partial timeline")
  endif()
endforeach()
