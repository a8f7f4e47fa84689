#!/usr/bin/env bash
# A GPU lease is 15 minutes and a fresh machine each call: building Osprey there (scripts/gpu-check.sh's default)
# takes a third of it, and every fix would pay it again. This carries the release build made here instead.
#
#   scripts/gpu-prebuilt.sh pack [BUILD_DIR]   here: BUILD_DIR (default build/release, CUDA plug-in built) without
#                                              its object files into .gpu-prebuilt/build.tar.xz, and the libraries
#                                              it links that are not glibc's or the compiler's into libs.tar.xz
#   scripts/gpu-prebuilt.sh unpack             there: the build back at the same absolute path (the test lists and
#                                              RUNPATHs name it), the libraries into /tmp/osprey-libs; prints the
#                                              build directory
#   scripts/gpu-prebuilt.sh dry-run RESULTS    here (CI): what the GPU machine runs, without a GPU: build/release
#                                              set aside, the packed build unpacked in its place, gpu-check.sh's
#                                              prebuilt path on it; build/release is put back however it ends
#
# pack fails when the packed build and the working tree that travels with it (tracked files, shared/ beside the
# checkout) exceed what one device call carries (64 MiB): the lent GPU must not be the first to find that out.
# Then on the device: run(command="OSPREY_GPU_PREBUILT=1 scripts/gpu-check.sh $OUT", carry=[".gpu-prebuilt"]).
# The libraries go last on LD_LIBRARY_PATH, so that the machine's own copies (and its Python's) win where it has
# them and ours only fill the gaps. The MPI plug-in's libraries are not carried (no mpirun there either).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu-prebuilt
libdir=/tmp/osprey-libs
limit_mib=64  # what the device tool carries in one call: the working tree, shared/ and the carried paths

case "${1:-}" in
  pack)
    build=${2:-build/release}
    [ -f "$build/libosprey_cuda.so" ] || { echo "gpu-prebuilt: $build has no CUDA plug-in" >&2; exit 1; }
    rm -rf "$out" && mkdir -p "$out"
    abs=$(cd "$build" && pwd)
    (cd "$build" && find . -path '*/CMakeFiles' -prune -o -path './tests/fuzz-*' -prune -o -name '*.o' -prune \
        -o -path './generated' -prune -o -path './Testing' -prune -o \( -type f -o -type l \) -print |
       sed 's|^\./||' >"$OLDPWD/$out/files.txt"
     # The export files `cmake --install` copies (the install.* tests install the build tree).
     find CMakeFiles/Export -type f >>"$OLDPWD/$out/files.txt" 2>/dev/null || true)
    tar -C "$build" -cJf "$out/build.tar.xz" -T "$out/files.txt"
    echo "$abs" >"$out/build_dir.txt"
    # The shared libraries the library, its plug-ins and the test programs need, less glibc and the compiler's.
    ldd "$build"/libosprey.so.0 "$build"/libosprey_cuda.so "$build"/libosprey_hdf5.so "$build"/tests/*_tests 2>/dev/null |
      awk '/=> \// {print $3}' | sort -u |
      grep -vE '/(libc|libm|libpthread|libdl|librt|libresolv|libstdc\+\+|libgcc_s|libosprey[^/]*)\.so' >"$out/libs.txt" || true
    mkdir -p "$out/libs"
    while read -r lib; do cp -L "$lib" "$out/libs/$(basename "$lib")"; done <"$out/libs.txt"
    tar -C "$out/libs" -cJf "$out/libs.tar.xz" .
    rm -rf "$out/libs"
    du -sh "$out"/*.tar.xz
    echo "gpu-prebuilt: $(wc -l <"$out/files.txt") build files from $abs, $(wc -l <"$out/libs.txt") libraries"
    packed=$(du -cb "$out"/* | tail -1 | cut -f1)
    tree=$(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
    [ -d ../shared ] && tree=$((tree + $(du -sb ../shared | cut -f1)))
    echo "gpu-prebuilt: $((packed / 1048576)) MiB packed + $((tree / 1048576)) MiB of working tree (limit $limit_mib MiB)"
    if ((packed + tree > limit_mib * 1048576)); then
      echo "gpu-prebuilt: too large for one device call" >&2
      exit 1
    fi
    ;;
  unpack)
    [ -f "$out/build.tar.xz" ] || { echo "gpu-prebuilt: no $out/build.tar.xz (run 'pack' here and carry $out)" >&2; exit 1; }
    abs=$(cat "$out/build_dir.txt")
    root=${abs%/build/*}  # the checkout the build was made in: the same path must hold this checkout
    if [ "$(cd "$root" 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then
      [ -e "$root" ] && { echo "gpu-prebuilt: $root exists and is not this checkout" >&2; exit 1; }
      mkdir -p "$(dirname "$root")"
      ln -s "$(pwd -P)" "$root"
    fi
    [ -d "$abs/CMakeFiles" ] && { echo "gpu-prebuilt: $abs is the build it was packed from; not replaced" >&2; exit 1; }
    rm -rf "$abs" && mkdir -p "$abs"
    tar -C "$abs" -xJf "$out/build.tar.xz"
    rm -rf "$libdir" && mkdir -p "$libdir"
    tar -C "$libdir" -xJf "$out/libs.tar.xz"
    echo "$abs"
    ;;
  dry-run)
    results=${2:?usage: scripts/gpu-prebuilt.sh dry-run RESULTS_DIR}
    [ -f "$out/build_dir.txt" ] || { echo "gpu-prebuilt: nothing packed (run 'pack' first)" >&2; exit 1; }
    abs=$(cat "$out/build_dir.txt")
    held=$abs.held
    [ -e "$held" ] && { echo "gpu-prebuilt: $held exists (an earlier dry run's build set aside?)" >&2; exit 1; }
    mv "$abs" "$held"
    trap 'rm -rf "$abs"; mv "$held" "$abs"' EXIT
    OSPREY_GPU_PREBUILT=1 scripts/gpu-check.sh "$results"
    ;;
  *) echo "usage: scripts/gpu-prebuilt.sh pack [BUILD_DIR] | unpack | dry-run RESULTS_DIR" >&2; exit 2 ;;
esac
