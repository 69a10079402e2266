# Source this: puts a libnvrtc on LD_LIBRARY_PATH so the NVRTC test can compile every .cu file without a GPU.
# Installs the NVIDIA runtime-compiler wheel from PyPI into .nvrtc/ on first use (about 100 MB download).
_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ ! -e "$_root/.nvrtc/nvidia/cu13/lib/libnvrtc.so.13" ]; then
    python3 -m pip install --quiet --disable-pip-version-check --target "$_root/.nvrtc" "nvidia-cuda-nvrtc==13.0.*" \
        || echo "warning: could not install nvidia-cuda-nvrtc; the NVRTC compile test will be skipped" >&2
fi
export LD_LIBRARY_PATH="$_root/.nvrtc/nvidia/cu13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset _root
