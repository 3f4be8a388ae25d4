# `shardline exec` end to end on the shipped host scenarios: measured outputs whose timeline
# is complete and ordered (checked by timeline_checker), data check fused / unfused / zero-copy,
# FSDP and HSDP, a corrupted op, the timeout path, and bad input (exit 2).
add_executable(shardline_timeline_checker timeline_checker.cpp)
target_include_directories(shardline_timeline_checker PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(shardline_timeline_checker PRIVATE shardline_exec)

set(_scen ${PROJECT_SOURCE_DIR}/scenarios)
set(_out ${CMAKE_CURRENT_BINARY_DIR}/cli)
set(_sl $<TARGET_FILE:shardline> exec)

# name np scenario out-subdir extra-args...
function(exec_cli_test name np scenario)
  add_test(NAME exec.cli.${name}
           COMMAND ${_mpirun} -n ${np} ${_sl} ${_scen}/${scenario} --iterations 2 --warmup 0 --out ${_out}/${name} ${ARGN})
  set_tests_properties(exec.cli.${name} PROPERTIES LABELS "exec;mpi;cli" TIMEOUT 90 ENVIRONMENT "${_env}"
                       FIXTURES_SETUP cli_${name} PASS_REGULAR_EXPRESSION "data check: passed")
  add_test(NAME exec.cli.${name}.timeline COMMAND shardline_timeline_checker ${_out}/${name} ${np})
  set_tests_properties(exec.cli.${name}.timeline PROPERTIES LABELS "exec;cli" FIXTURES_REQUIRED cli_${name})
endfunction()

exec_cli_test(fsdp_fused 2 host-tiny-fsdp.json)
exec_cli_test(fsdp_unfused 2 host-tiny-fsdp.json --set policy.comm_fusion=false)
exec_cli_test(hsdp_fused 4 host-tiny-hsdp.json --scale 4)
exec_cli_test(hsdp_zero_copy 4 host-tiny-hsdp.json --scale 4 --set policy.zero_copy=true --compute spin)

# --np launches mpirun itself (root and oversubscription flags added by shardline).
add_test(NAME exec.cli.np_self_launch
         COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:shardline>;exec;${_scen}/host-tiny-fsdp.json;--np;2;--iterations;1;--warmup;0;--scale;4;--no-verify"
                 -DRC=0 "-DREGEX=launching: .*mpirun.*--oversubscribe.*-n 2.*buffers scaled 1/4.*data check: skipped"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
set_tests_properties(exec.cli.np_self_launch PROPERTIES LABELS "exec;cli" TIMEOUT 60 ENVIRONMENT "${_env}")

# --np binds each rank to a core when every rank can own one, and shares cores among bound ranks
# when there are more ranks than the processors this process may use (taskset leaves it one).
# The launcher is `echo`, so only the mpirun line is checked.
add_test(NAME exec.cli.np_binds_a_rank_per_core
         COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:shardline>;exec;${_scen}/host-tiny-fsdp.json;--np;1;--set;mesh.shard=1;--set;cluster.gpus_per_node=1;--out;${_out}/bind_core"
                 -DRC=0 "-DREGEX=launching: echo .*--bind-to core -n 1 "
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
add_test(NAME exec.cli.np_shares_cores_beyond_cores
         COMMAND ${CMAKE_COMMAND} "-DCMD=taskset;-c;0;$<TARGET_FILE:shardline>;exec;${_scen}/host-tiny-fsdp.json;--np;2;--out;${_out}/bind_overload"
                 -DRC=0 "-DREGEX=launching: echo .*--bind-to core:overload-allowed -n 2 "
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
# The echoed launcher line can be pasted back into a shell: an argument with a space is quoted.
add_test(NAME exec.cli.np_launch_line_is_shell_quoted
         COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:shardline>;exec;${_scen}/host-tiny-fsdp.json;--np;2;--out;${_out}/with space"
                 -DRC=0 "-DREGEX=launching: echo .* --out '[^']*/with space'"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
set_tests_properties(exec.cli.np_binds_a_rank_per_core exec.cli.np_shares_cores_beyond_cores exec.cli.np_launch_line_is_shell_quoted
                     PROPERTIES LABELS "exec;cli" TIMEOUT 30 ENVIRONMENT "SHARDLINE_MPIEXEC=echo")

# A corrupted copy-in (op 1 of the fused FSDP program) fails the run with exit 1 naming the op.
add_test(NAME exec.cli.corrupt_op
         COMMAND ${CMAKE_COMMAND} "-DCMD=${_mpirun};-n;2;$<TARGET_FILE:shardline>;exec;${_scen}/host-tiny-fsdp.json;--iterations;1;--corrupt-op;1"
                 -DRC=1 "-DREGEX=data check failed on rank [01]: op 1 \"[^\"]+\" \\(copy_in"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
set_tests_properties(exec.cli.corrupt_op PROPERTIES LABELS "exec;cli" TIMEOUT 60 ENVIRONMENT "${_env}")

# A stalled rank ends the run within --timeout with partial timelines in --out.
add_test(NAME exec.cli.timeout
         COMMAND ${CMAKE_COMMAND} "-DCMD=${_mpirun};-n;2;$<TARGET_FILE:shardline>;exec;${_scen}/host-tiny-fsdp.json;--timeout;3;--stall-rank;1;--out;${_out}/timeout"
                 "-DRC=3" "-DREGEX=rank 1 made no progress for 3 s.*stalled before op [0-9]+ .*on stream"
                 "-DCLEAN=${_out}/timeout" "-DFILES=${_out}/timeout/timeline.partial.rank0.json;${_out}/timeout/timeline.partial.rank1.json"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
set_tests_properties(exec.cli.timeout PROPERTIES LABELS "exec;cli" TIMEOUT 60 ENVIRONMENT "${_env}")

# A rank that dies (SIGKILL) is reported by the survivors: mpirun ends them with SIGTERM, and each
# says where it was and writes its partial timeline before mpirun's SIGKILL follows.
add_test(NAME exec.cli.dead_rank
         COMMAND ${CMAKE_COMMAND} "-DCMD=${_mpirun};-n;2;$<TARGET_FILE:shardline>;exec;${_scen}/host-tiny-fsdp.json;--kill-rank;1;--out;${_out}/dead_rank"
                 "-DRC=137" "-DREGEX=rank 0 was ended by SIGTERM \\(mpirun sends it when another rank dies.*this rank was at: .*op"
                 "-DCLEAN=${_out}/dead_rank" "-DFILES=${_out}/dead_rank/timeline.partial.rank0.json;${_out}/dead_rank/error.rank0.txt"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
set_tests_properties(exec.cli.dead_rank PROPERTIES LABELS "exec;cli" TIMEOUT 60 ENVIRONMENT "${_env}")
# Launched with --np, shardline waits for mpirun and names the rank that left no report.
add_test(NAME exec.cli.dead_rank_np
         COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:shardline>;exec;${_scen}/host-tiny-fsdp.json;--np;2;--kill-rank;1;--out;${_out}/dead_rank_np"
                 "-DRC=137" "-DREGEX=rank 1 ended without a report \\(killed or crashed.*partial timelines of rank 0 are in"
                 "-DCLEAN=${_out}/dead_rank_np" "-DFILES=${_out}/dead_rank_np/timeline.partial.rank0.json"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
set_tests_properties(exec.cli.dead_rank_np PROPERTIES LABELS "exec;cli" TIMEOUT 60 ENVIRONMENT "${_env}")
# Launched with --np, shardline passes a SIGTERM on to mpirun and leaves Ctrl-C to it, and waits.
# (Python starts the run with Ctrl-C's default action, which a background job lacks.)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME exec.cli.np_signals
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/exec_np_signals.sh ${Python3_EXECUTABLE} $<TARGET_FILE:shardline>
                 ${_scen}/host-tiny-fsdp.json ${_out}/np_signals)
set_tests_properties(exec.cli.np_signals PROPERTIES LABELS "exec;cli" TIMEOUT 90 ENVIRONMENT "${_env}")
add_test(NAME exec.cli.validate_sigterm
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/validate_sigterm.sh $<TARGET_FILE:shardline>
                 ${_scen}/host-tiny-fsdp.json ${_out}/validate_sigterm)
set_tests_properties(exec.cli.validate_sigterm PROPERTIES LABELS "exec;cli" TIMEOUT 90 ENVIRONMENT "${_env}")

# Bad input: exit 2 with the flag or path named, before anything runs.
function(exec_bad_input name regex)
  add_test(NAME exec.cli.bad.${name}
           COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:shardline>;exec;${ARGN}" -DRC=2 "-DREGEX=${regex}"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
  set_tests_properties(exec.cli.bad.${name} PROPERTIES LABELS "exec;cli" TIMEOUT 30 ENVIRONMENT "${_env}")
endfunction()
exec_bad_input(backend "--backend: expected mpi or nccl" ${_scen}/host-tiny-fsdp.json --backend gloo)
exec_bad_input(scale "--scale: must be a positive integer" ${_scen}/host-tiny-fsdp.json --scale 0)
exec_bad_input(np_mismatch "--np: the scenario's mesh has 4 ranks.*use --np 4, or a mesh of 2 ranks on as many GPUs, e.g. --set mesh.shard=2 --set mesh.replicate=1 --set cluster.nodes=1 --set cluster.gpus_per_node=2"
               ${_scen}/host-tiny-hsdp.json --np 2)
exec_bad_input(compute "--compute: kernel stand-ins need --backend nccl" ${_scen}/host-tiny-fsdp.json --compute kernel)
exec_bad_input(missing_scenario "error" ${CMAKE_CURRENT_SOURCE_DIR}/no-such-scenario.json)
exec_bad_input(world_mismatch "mpirun -n: the program runs on 4 ranks .shard 2, replicate 2., but the run has 1"
               ${_scen}/host-tiny-hsdp.json)
# Negative or zero counts are refused, not replaced by the scenario's (exit 2 naming the flag),
# before mpirun starts: with --np the message comes once, not once per rank.
exec_bad_input(iterations "--iterations: must be in .1, 1024., got -3" ${_scen}/host-tiny-fsdp.json --iterations -3)
exec_bad_input(iterations_zero "--iterations: must be in .1, 1024., got 0" ${_scen}/host-tiny-fsdp.json --iterations 0 --np 2)
exec_bad_input(iterations_over_a_timeline "--iterations: must be in .1, 1024., got 1025" ${_scen}/host-tiny-fsdp.json --iterations 1025 --np 2)
exec_bad_input(warmup "--warmup: must be in .0, 1024., got -3" ${_scen}/host-tiny-fsdp.json --warmup -3)
exec_bad_input(warmup_over_a_timeline "--warmup: must be in .0, 1024., got 100000" ${_scen}/host-tiny-fsdp.json --warmup 100000 --np 2)
exec_bad_input(timeout "--timeout: 0 is out of range; expected seconds in .1, 86400." ${_scen}/host-tiny-fsdp.json --timeout 0 --np 2)
exec_bad_input(timeout_inf "--timeout: inf is out of range" ${_scen}/host-tiny-fsdp.json --timeout inf --np 2)
set_tests_properties(exec.cli.bad.iterations_zero exec.cli.bad.timeout PROPERTIES FAIL_REGULAR_EXPRESSION "error:.*error:|launching")
# --backend nccl on a machine without a GPU (or a build without CUDA): one message, before mpirun.
if(NOT EXISTS "/dev/nvidia0")  # registered on machines without a GPU
  exec_bad_input(nccl_no_gpu "--backend: (nccl needs one GPU per rank|this shardline was built without CUDA)"
                 ${_scen}/host-tiny-fsdp.json --backend nccl --np 2)
  set_tests_properties(exec.cli.bad.nccl_no_gpu PROPERTIES FAIL_REGULAR_EXPRESSION "launching")
endif()
# An error every rank finds under mpirun is printed once (by rank 0), not once per rank.
add_test(NAME exec.cli.bad.once_under_mpirun
         COMMAND ${CMAKE_COMMAND} "-DCMD=${_mpirun};-n;2;$<TARGET_FILE:shardline>;exec;${_scen}/host-tiny-fsdp.json;--set;policy.micro_batches=0"
                 -DRC=2 "-DREGEX=policy.micro_batches" -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
set_tests_properties(exec.cli.bad.once_under_mpirun PROPERTIES LABELS "exec;cli" TIMEOUT 60 ENVIRONMENT "${_env}"
                     FAIL_REGULAR_EXPRESSION "error: policy.micro_batches.*error: policy.micro_batches")
# One found only under mpirun, launched by --np (each rank's buffers, 420 GB of them, against its
# memory): the rank's message, and none of mpirun's routine notices after it ("Primary job
# terminated normally, but ...", held back by shardline's filter of mpirun's stderr).
add_test(NAME exec.cli.bad.np_error_without_mpirun_lines
         COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:shardline>;exec;${_scen}/host-tiny-fsdp.json;--np;2;--set;model.units.1.repeat=20000"
                 -DRC=2 "-DREGEX=launching: .*error: --scale: needs [0-9.]+ MiB per rank" -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
set_tests_properties(exec.cli.bad.np_error_without_mpirun_lines PROPERTIES LABELS "exec;cli" TIMEOUT 60 ENVIRONMENT "${_env}"
                     FAIL_REGULAR_EXPRESSION "Primary job|mpirun detected")
# A rank that dies is still named by mpirun's own notice, which the filter passes.
add_test(NAME exec.cli.np_killed_rank_named
         COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:shardline>;exec;${_scen}/host-tiny-fsdp.json;--np;2;--kill-rank;1;--iterations;1;--warmup;0"
                 -DRC=137 "-DREGEX=mpirun noticed that process rank 1 .*exited on signal 9" -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
set_tests_properties(exec.cli.np_killed_rank_named PROPERTIES LABELS "exec;cli" TIMEOUT 60 ENVIRONMENT "${_env}"
                     FAIL_REGULAR_EXPRESSION "Primary job")
# The test hooks name ranks and ops of the run, checked before mpirun starts.
exec_bad_input(kill_rank "--kill-rank: no rank -1 in the scenario's 2 ranks" ${_scen}/host-tiny-fsdp.json --np 2 --kill-rank -1)
exec_bad_input(corrupt_op "--corrupt-op: no op 99999 in the program of" ${_scen}/host-tiny-fsdp.json --np 2 --corrupt-op 99999)
exec_bad_input(stall_op "--stall-op: no op -5 in the program of" ${_scen}/host-tiny-fsdp.json --np 2 --kill-rank 1 --stall-op -5)
set_tests_properties(exec.cli.bad.kill_rank exec.cli.bad.corrupt_op exec.cli.bad.stall_op PROPERTIES FAIL_REGULAR_EXPRESSION "launching")
# Without --np or mpirun a run is one rank: that is the error, not a hook's rank missing from it.
exec_bad_input(kill_rank_one_process "mpirun -n: the program runs on 2 ranks.*but the run has 1" ${_scen}/host-tiny-fsdp.json --kill-rank 1)
# A poll interval that is not a whole number of microseconds: exit 2 naming the variable.
exec_bad_input(poll_env "SHARDLINE_MPI_POLL_US: \"soon\" is not a whole number of microseconds" ${_scen}/host-tiny-fsdp.json)
set_tests_properties(exec.cli.bad.poll_env PROPERTIES ENVIRONMENT "${_env};SHARDLINE_MPI_POLL_US=soon")
# One out of range is refused as out of range, before mpirun starts.
exec_bad_input(poll_env_range "SHARDLINE_MPI_POLL_US: \"99999999999\" is out of range" ${_scen}/host-tiny-fsdp.json --np 2)
set_tests_properties(exec.cli.bad.poll_env_range PROPERTIES ENVIRONMENT "${_env};SHARDLINE_MPI_POLL_US=99999999999"
                     FAIL_REGULAR_EXPRESSION "launching")

# Bad flags are one message before mpirun starts, and a failed calibrate leaves no file behind
# (an empty profile.json read later as malformed JSON; found by a new-user tour).
set(_nothing ${CMAKE_CURRENT_BINARY_DIR}/calibrate_bad_flag.json)
add_test(NAME exec.cli.calibrate_bad_flag_writes_nothing
         COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:shardline>;calibrate;--np;2;--out;${_nothing};--repetitions;0"
                 -DRC=2 "-DREGEX=calibrate: error: --repetitions: must be in .1, 10000., got 0" "-DNOREGEX=launching"
                 "-DCLEAN=${_nothing}" "-DABSENT=${_nothing}" -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
add_test(NAME exec.cli.calibrate_bad_passes_writes_nothing
         COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:shardline>;calibrate;--np;2;--out;${_nothing};--passes;0"
                 -DRC=2 "-DREGEX=calibrate: error: --passes: must be in .1, 100., got 0" "-DNOREGEX=launching"
                 "-DCLEAN=${_nothing}" "-DABSENT=${_nothing}" -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
add_test(NAME exec.cli.calibrate_too_few_sizes_writes_nothing
         COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:shardline>;calibrate;--np;2;--out;${_nothing};--max-bytes;1KiB"
                 -DRC=2 "-DREGEX=--max-bytes: leaves fewer than two sizes" "-DNOREGEX=launching"
                 "-DCLEAN=${_nothing}" "-DABSENT=${_nothing}" -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
# A bad --out is refused before the run, not after it.
add_test(NAME exec.cli.out_checked_before_the_run
         COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:shardline>;exec;${_scen}/host-tiny-fsdp.json;--np;2;--out;."
                 -DRC=2 "-DREGEX=exec: error: --out: .* names the current folder" "-DNOREGEX=launching"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
add_test(NAME exec.cli.validate_checks_np_and_out_first
         COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:shardline>;validate;${_scen}/host-tiny-fsdp.json;--np;0"
                 -DRC=2 "-DREGEX=validate: error: --np: validate needs at least 2 ranks" "-DNOREGEX=running:"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
add_test(NAME exec.cli.validate_out_checked_first
         COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:shardline>;validate;${_scen}/host-tiny-fsdp.json;--out;."
                 -DRC=2 "-DREGEX=validate: error: --out: .* names the current folder" "-DNOREGEX=running:"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_run.cmake)
set_tests_properties(exec.cli.calibrate_bad_flag_writes_nothing exec.cli.calibrate_bad_passes_writes_nothing exec.cli.calibrate_too_few_sizes_writes_nothing
                     exec.cli.out_checked_before_the_run exec.cli.validate_checks_np_and_out_first exec.cli.validate_out_checked_first
                     PROPERTIES LABELS "exec;cli" TIMEOUT 30 ENVIRONMENT "${_env}")

