# Hostile-tenant tests (issue #16): each attack an unprivileged local user
# could try on a node with a root gpusliced, run as such users (setpriv);
# skipped (77) when the tests are not run as root. gs-region-forge does
# to the shared region what an attacker's own code could.
add_executable(gs-region-forge ${CMAKE_CURRENT_LIST_DIR}/forge.c)
set_target_properties(gs-region-forge PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-region-forge PRIVATE ${CMAKE_SOURCE_DIR}/region)
target_link_libraries(gs-region-forge PRIVATE Threads::Threads)
foreach(t
    tenant_cannot_join_another_users_slice
    forged_process_entry_cannot_get_another_process_killed
    shim_fails_closed_when_its_entry_is_tampered_or_its_slice_deleted
    run_directory_of_another_user_is_refused
    watchdog_stops_processes_in_no_slice_or_over_their_share
    a_wedged_region_lock_is_repaired_when_the_daemon_restarts
    one_tenant_cannot_take_every_process_slot
    tenant_cannot_drain_a_neighbours_token_bucket
    tenant_cannot_read_or_write_another_tenants_books
    lies_about_ones_own_books_or_bucket_are_stopped_by_the_watchdog
    cutting_region_files_short_stops_neither_the_daemon_nor_a_neighbour
    a_wedged_region_lock_is_repaired_while_the_daemon_runs
    pod_cannot_touch_another_pods_books
    a_tenant_cannot_reorder_turns_on_its_gpu
    a_gpu_the_daemon_does_not_manage_is_refused_to_a_slice
    false_books_cannot_void_the_ledger_or_undo_a_delete
    billing_rests_on_nvml_whatever_the_books_say
    a_slices_seventeenth_process_does_not_escape_the_watchdog
    compute_split_over_two_slices_is_judged_per_owner
    short_processes_in_no_slice_are_caught_and_their_owner_reported
    a_tenant_cannot_give_itself_a_higher_priority
    many_lying_slices_of_one_tenant_do_not_starve_a_neighbour
    answers_reveal_nothing_of_other_owners
    a_tenant_reconnecting_in_a_loop_cannot_lock_root_out
    the_watchdog_kills_by_default_where_tenants_share_a_node
    work_launched_and_never_synchronised_is_billed
    honest_time_slicing_raises_no_ledger_divergence
    another_tenant_gets_in_while_one_reconnects_in_a_loop
    the_owner_of_a_process_that_ended_unseen_is_reported
    links_planted_by_another_user_are_refused_not_followed
    a_lying_slice_with_a_share_takes_no_time_from_a_strict_neighbour
    an_owners_many_slices_take_no_more_turns_than_one_from_a_neighbour
    a_slice_with_no_compute_share_never_takes_a_strict_slices_time)
  gs_add_shell_test(${t} tests/integration/security/${t}.sh
                    LABELS security TIMEOUT 180)
  set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()

# Charges corrected by NVML (daemon/chargeratio.c): a limited slice keeps
# its share beside a time-sliced neighbour; books held at 0 gain nothing.
foreach(t
    a_limited_slice_gets_its_share_by_nvml_beside_a_time_sliced_neighbour
    books_held_at_zero_earn_no_discount_on_the_charge)
  gs_add_shell_test(${t} tests/integration/security/${t}.sh
                    LABELS security TIMEOUT 240)
  set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
