#!/usr/bin/env bash
# Installs the Debian packages Osprey builds with, when any is missing (DESIGN.md §4). Needs root (or sudo).
set -euo pipefail
packages=(build-essential cmake ninja-build libdnnl-dev libfmt-dev nlohmann-json3-dev libcli11-dev
          libgtest-dev libgmock-dev libbenchmark-dev libhdf5-dev libpng-dev libturbojpeg0-dev libgif-dev libstb-dev
          libopenmpi-dev openmpi-bin zlib1g-dev graphviz libprotobuf-dev protobuf-compiler libisal-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "Installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
