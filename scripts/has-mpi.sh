#!/bin/sh
# Exit 0 where the `mpi` feature can be built and run here: mpirun, and the libclang the `mpi` crate's bindings need
# (Debian: libopenmpi-dev openmpi-bin libclang-dev). The one test of it for test.sh, build-carry.sh and .ci/run.
command -v mpirun >/dev/null && ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1
