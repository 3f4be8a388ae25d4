# Smoke tests of the benchmark binaries (bench/): each benchmark family once, minimal sizes,
# JSON counters checked by bench/check_bench_json.py. Included from tests/CMakeLists.txt because
# CTest is enabled after bench/ is added. No timing is asserted.
if(TARGET shardline_bench OR TARGET shardline_bench_sim)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  set(_check ${PROJECT_SOURCE_DIR}/bench/check_bench_json.py)
endif()
if(TARGET shardline_bench)
  add_test(NAME bench.collectives_smoke
           COMMAND ${Python3_EXECUTABLE} ${_check} collectives --np 2 --binary $<TARGET_FILE:shardline_bench>
                   "--mpiexec=${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe --bind-to none")
  set_tests_properties(bench.collectives_smoke PROPERTIES LABELS "bench;mpi" TIMEOUT 120
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
  # A backend name it does not know: exit 2 naming the flag (singleton MPI, no mpirun needed).
  add_test(NAME bench.bad_backend COMMAND $<TARGET_FILE:shardline_bench> --backend tpu)
  set_tests_properties(bench.bad_backend PROPERTIES LABELS "bench" TIMEOUT 60 WILL_FAIL TRUE
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
  add_test(NAME bench.bad_backend_message COMMAND $<TARGET_FILE:shardline_bench> --backend tpu)
  set_tests_properties(bench.bad_backend_message PROPERTIES LABELS "bench" TIMEOUT 60
    PASS_REGULAR_EXPRESSION "--backend: unknown backend \"tpu\"; expected mpi or nccl"
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
  # A bucket range with no size in it: exit 2 naming the flag, not an empty run.
  add_test(NAME bench.empty_bucket_range COMMAND $<TARGET_FILE:shardline_bench> --min-bucket 1MiB --max-bucket 64KiB)
  set_tests_properties(bench.empty_bucket_range PROPERTIES LABELS "bench" TIMEOUT 60 WILL_FAIL TRUE
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
  add_test(NAME bench.empty_bucket_range_message COMMAND $<TARGET_FILE:shardline_bench> --min-bucket 1MiB --max-bucket 64KiB)
  set_tests_properties(bench.empty_bucket_range_message PROPERTIES LABELS "bench" TIMEOUT 60
    PASS_REGULAR_EXPRESSION "--max-bucket: no bucket size \\(64 KiB times a power of two\\) lies in \\[1MiB, 64KiB\\]"
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
endif()
if(TARGET shardline_bench_sim)
  add_test(NAME bench.sim_smoke COMMAND ${Python3_EXECUTABLE} ${_check} sim --binary $<TARGET_FILE:shardline_bench_sim>)
  set_tests_properties(bench.sim_smoke PROPERTIES LABELS "bench" TIMEOUT 120)
endif()
