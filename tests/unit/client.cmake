# Unit tests for the client library (client/, gs_client) against a small
# fake gpusliced on a socket in a scratch directory.
gs_add_unit_test(test_client SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_client.c
                 LIBS gs_client Threads::Threads)
