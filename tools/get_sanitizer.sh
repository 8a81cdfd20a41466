#!/usr/bin/env bash
# get_sanitizer.sh [DIR] - compute-sanitizer 2026.4 (NVIDIA's nvidia-cuda-sanitizer-api 13.5.25 wheel)
# for the GPU machine, whose own 2025.3.1 reports the megakernel's named-barrier item code as racy
# (false positives the 2026 releases fixed; bench/NOTES.md, session 58). 2026.4 runs on the lent
# driver 580. Unpacks the tool and its libraries into DIR (default: build-san2026, ignored by git),
# leaving out the wheel's docs, headers and 32-bit copies (~36 MB). Fetch here, carry DIR, then:
#   MKG_SANITIZER=build-san2026/compute-sanitizer MKG_STAGES=sanitize bash bench/run_gpu.sh OUT
set -eu -o pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build-san2026}
ver=${MKG_SANITIZER_VERSION:-13.5.25}
mkdir -p "$dir/whl"
pip download -q --no-deps -d "$dir/whl" "nvidia-cuda-sanitizer-api==$ver"
python3 - "$dir"/whl/nvidia_cuda_sanitizer_api-"$ver"-*.whl "$dir" <<'PY'
import os, sys, zipfile
whl, out = sys.argv[1], sys.argv[2]
key = "/compute-sanitizer/"
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        if key not in n or n.endswith("/"):
            continue
        rel = n.split(key, 1)[1]
        if rel.split("/")[0] in ("docs", "include", "x86"):
            continue
        dst = os.path.join(out, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(z.read(n))
        os.chmod(dst, 0o755)
PY
rm -rf "$dir/whl"
echo "$dir/compute-sanitizer (runs on the GPU machine; 'compute-sanitizer --version' there)"
