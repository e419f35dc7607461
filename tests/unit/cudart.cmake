# The cudart tests live in tests/cudart (programs built with nvcc, run on
# the sim and under `gpuslice run`); this fragment only brings them in.
include(${CMAKE_SOURCE_DIR}/tests/cudart/cudart.cmake)
