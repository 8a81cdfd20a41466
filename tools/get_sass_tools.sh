#!/usr/bin/env bash
# get_sass_tools.sh [DIR] - cuobjdump and nvdisasm for a machine without them (the GPU-less build
# machine and CI have ptxas but no disassembler). Downloads NVIDIA's nvidia-cuda-cuobjdump and
# nvidia-cuda-nvdisasm wheels (13.2: the oldest on PyPI; they read the CUDA 13.0 compiler's sm_90a
# cubins) and unpacks their binaries into DIR/bin (default: build-sass-tools, ignored by git).
# Then, with a local build in /tmp/bl for example:
#   PATH=$PWD/build-sass-tools/bin:$PATH MKG_BUILD_DIR=/tmp/bl MKG_STAGES=sass bash bench/run_gpu.sh /tmp/sass
#   cuobjdump --dump-sass /tmp/bl/ptxas/mkg_megakernel.cubin | python3 tools/sass_counts.py
set -eu -o pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build-sass-tools}
ver=${MKG_SASS_TOOLS_VERSION:-13.2.51}
mkdir -p "$dir/bin" "$dir/whl"
pip download -q --no-deps -d "$dir/whl" "nvidia-cuda-cuobjdump==$ver" "nvidia-cuda-nvdisasm==$ver"
for w in "$dir"/whl/nvidia_cuda_cuobjdump-"$ver"-*.whl "$dir"/whl/nvidia_cuda_nvdisasm-"$ver"-*.whl; do
  python3 - "$w" "$dir/bin" <<'EOF'
import os, sys, zipfile
whl, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        if n.endswith("/bin/cuobjdump") or n.endswith("/bin/nvdisasm"):
            dst = os.path.join(out, os.path.basename(n))
            with open(dst, "wb") as f:
                f.write(z.read(n))
            os.chmod(dst, 0o755)
EOF
done
"$dir/bin/cuobjdump" --version | tail -1
"$dir/bin/nvdisasm" --version | tail -1
