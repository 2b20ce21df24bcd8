# tests/device.sh stage mpi-setup (sourced by tests/device.sh; docs/gpu-machine.md lists what it writes).
# The device has no package registry: OpenMPI comes as .deb files carried in
# build-carry/mpi-debs/ (the list is in docs/multi-gpu.md), unpacked into a private root.
# Run `build` after this stage so the binary is built with MPI.
if command -v mpirun >/dev/null; then note "mpi-setup: mpirun already on PATH"; return; fi
if ! ls build-carry/mpi-debs/*.deb >/dev/null 2>&1; then
  note "skipped mpi-setup: no mpirun and no build-carry/mpi-debs/*.deb (see docs/multi-gpu.md)"; return
fi
root=$PWD/build-carry/mpi-root; mkdir -p $root
for deb in build-carry/mpi-debs/*.deb; do dpkg -x $deb $root; done
export OPAL_PREFIX=$root/usr PATH=$root/usr/bin:$PATH MPI_HOME=$root/usr
export LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu/openmpi/lib:$root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export OMPI_MCA_plm_rsh_agent=false  # one host: never look for ssh
note "mpi-setup: $(mpirun --version 2>&1 | head -1)"
