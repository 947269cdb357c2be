#!/usr/bin/env bash
# Run HERE (the development machine, which reaches Debian's registry), not on the GPU machine: makes .gpudeps/,
# the libraries and data the GPU machine's image lacks (it reaches no registry), for the device tool's `carry`:
#   .gpudeps/root/usr/...    libjpeg-turbo (libjpeg API), libspng, libpng, OpenSSL's libcrypto: headers and shared
#                            libraries unpacked from Debian's packages (no static archives, no docs); the build finds
#                            them through CMAKE_PREFIX_PATH (bench/gpu-check.sh does it) and its binaries' RUNPATH
#   .gpudeps/fashion-mnist/  Debian's dataset-fashion-mnist files (the recipe's data)
#   .gpudeps/photos/         scikit-image's photographs (bench/make_jpeg_folder.py --photos)
#   .gpudeps/nccl-2.30.7-1.tar.gz  NCCL 2.30.7 source (../shared/third_party), for bench/nccl-build.sh
# About 45 MB, under the device tool's 64 MiB for the whole tree. Idempotent.
# Usage: bash bench/gpu-deps.sh   then: run(carry=[".gpudeps"], command="bash bench/gpu-check.sh ...")
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx "/.gpudeps/" .git/info/exclude 2>/dev/null || echo "/.gpudeps/" >>"$(git rev-parse --git-common-dir)/info/exclude"
mkdir -p .gpudeps/debs .gpudeps/fashion-mnist .gpudeps/photos
(cd .gpudeps/debs && apt-get download libturbojpeg0 libturbojpeg0-dev libjpeg62-turbo libjpeg62-turbo-dev \
   libspng0 libspng-dev libpng16-16 libpng-dev libssl-dev libssl3 2>&1 | grep -v '^W:' || true)
for deb in .gpudeps/debs/*.deb; do dpkg -x "$deb" .gpudeps/root; done
rm -rf .gpudeps/debs .gpudeps/root/usr/share/doc .gpudeps/root/usr/share/man
find .gpudeps/root -name '*.a' -delete
cp /usr/share/datasets/fashion-mnist/*.gz .gpudeps/fashion-mnist/
photos=/usr/lib/python3/dist-packages/skimage/data
for p in astronaut.png coffee.png chelsea.png rocket.jpg motorcycle_left.png motorcycle_right.png retina.jpg \
         hubble_deep_field.jpg camera.png; do cp "$photos/$p" .gpudeps/photos/; done
cp ../shared/third_party/nccl-2.30.7-1.tar.gz .gpudeps/
du -sh .gpudeps
