#!/usr/bin/env bash
# The bare GPU machine (no package registry, none of our Debian dependencies) builds Osprey from a bundle made
# here: the build dependencies' Debian packages (runtime and -dev) downloaded into .gpu-bundle/debs (git-ignored;
# name it in the device tool's `carry`), unpacked there with `dpkg -x` into a private prefix, never over /.
#
#   scripts/gpu-bundle.sh            download the packages (needs Debian's registry), print the bundle's size
#   scripts/gpu-bundle.sh unpack DIR unpack them into the prefix DIR (prints the CMake options to use it)
#   scripts/gpu-bundle.sh configure  prove it here: configure against the unpacked prefix with the system's /usr
#                                    ignored by find_package, each dependency found there (what CI runs)
#   scripts/gpu-bundle.sh check      configure as above, then build and run the CPU tests from the prefix
#
# HDF5 is left out: with its curl/ssl chain it would not fit the 64 MiB the device tool carries, and the GPU
# checks do not need it; without it the HDF5 plug-in is not built and its tests skip (CI runs them).
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=.gpu-bundle
packages=(libdnnl-dev libdnnl2 ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers
          libfmt-dev libfmt9 nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev)
limit_mib=48  # of the 64 MiB a device call carries, the rest is the source tree

# dpkg -x where dpkg exists; otherwise the .deb's data archive through ar and tar.
unpack_deb() {
  if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$1" "$2"; return; fi
  local tmp
  tmp=$(mktemp -d)
  (cd "$tmp" && ar x "$OLDPWD/$1")
  tar -xf "$tmp"/data.tar.* -C "$2"
  rm -rf "$tmp"
}

case "${1:-download}" in
  download)
    mkdir -p "$bundle/debs"
    rm -f "$bundle/debs/"*.deb
    (cd "$bundle/debs" && apt-get download "${packages[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true)
    for p in "${packages[@]}"; do
      ls "$bundle/debs/${p}_"*.deb >/dev/null 2>&1 || { echo "gpu-bundle: $p was not downloaded" >&2; exit 1; }
    done
    kib=$(du -sk "$bundle/debs" | cut -f1)
    echo "gpu-bundle: ${#packages[@]} packages, $((kib / 1024)) MiB in $bundle/debs (limit $limit_mib MiB)"
    if ((kib > limit_mib * 1024)); then echo "gpu-bundle: too large for the device tool" >&2; exit 1; fi
    ;;
  unpack)
    prefix=${2:?usage: gpu-bundle.sh unpack DIR}
    mkdir -p "$prefix"
    for deb in "$bundle"/debs/*.deb; do unpack_deb "$deb" "$prefix"; done
    prefix=$(cd "$prefix" && pwd)
    echo "-DCMAKE_PREFIX_PATH=$prefix/usr"
    ;;
  configure|check)
    [ -d "$bundle/debs" ] || "$0" download
    rm -rf "$bundle/prefix" build/prefix-check
    opts=$("$0" unpack "$bundle/prefix")
    # find_package may not look in /usr (where this machine has the same packages installed): every dependency
    # must come from the prefix.
    cmake -S . -B build/prefix-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DOSPREY_WARNINGS_AS_ERRORS=ON \
      "$opts" -DCMAKE_IGNORE_PREFIX_PATH=/usr -DOSPREY_BUILD_CUDA_PLUGIN=OFF >/dev/null
    for dep in dnnl fmt nlohmann_json GTest CLI11; do
      dir=$(grep -E "^${dep}_DIR:" build/prefix-check/CMakeCache.txt | cut -d= -f2)
      case "$dir" in
        "$PWD/$bundle/prefix/"*) echo "gpu-bundle: $dep from $dir" ;;
        *) echo "gpu-bundle: $dep was found outside the prefix: $dir" >&2; exit 1 ;;
      esac
    done
    [ "$1" = configure ] && exit 0
    cmake --build build/prefix-check
    ctest --test-dir build/prefix-check -j "$(nproc)" --output-on-failure
    ;;
  *) echo "usage: scripts/gpu-bundle.sh [download | unpack DIR | configure | check]" >&2; exit 2 ;;
esac
